"""A SkyPilot task per candidate GPU that measures a job there, with its time, cost and caps.

Measuring a rented GPU for two minutes before renting it for weeks is cheap only while the two
minutes stay two minutes, so every number here is an upper bound said with its parts:

- expected time: start-up + install + warm-up + measurement. The first three are assumptions
  read from the catalog's ``cloud_overheads.csv`` (each with its source); the measurement is
  bench's own time budget (``--seconds``, which it never exceeds), once per ``--scaling`` count;
- hard caps: setup's install and run's bench each run under ``timeout`` at ``cap_factor`` times
  their expected seconds (SkyPilot has no per-task wall-clock field in every version), and the
  cluster is torn down ``idle_minutes`` after its job ends (``sky launch --down -i``, as
  ``cloud run`` launches it), so the most a task can bill is start-up + both caps + the idle
  minutes;
- cost: the catalog's cheapest on-demand price for the GPU (``price.instances``), x GPUs x
  nodes x hours. SkyPilot picks among the clouds you enabled, which may cost more; the hard
  caps, not the price, bound the time.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass
from pathlib import Path

from gpuscout.catalog import Catalog, Gpu
from gpuscout.cloud.inputs import REMOTE_INPUTS, Shipped
from gpuscout.cloud.names import Overheads, SkyName
from gpuscout.price.instances import Rental, cheapest_rental

REMOTE_HOME = "$HOME/gpuscout-cloud"  # on each node: the run's database and its export
EXPORT_ENV = "GPUSCOUT_CLOUD_EXPORT"
IDLE_ENV = "GPUSCOUT_CLOUD_IDLE_MINUTES"
KILL_AFTER_S = 30  # timeout's grace after its SIGTERM (bench stores the interrupted run)


@dataclass(frozen=True)
class Bench:
    """The ``gpuscout bench`` a task runs, as the plan needs it."""

    args: tuple[str, ...]  # after 'bench', paths of your files already made remote
    measure_s: float  # bench's own time budget, in all (every --scaling count)
    measure_how: str  # how that was reached, printed
    shipped: tuple[Shipped, ...] = ()  # the folders of your --model and --data files
    backend: str = "tensorflow"
    counts: tuple[int, ...] = ()  # bench --scaling's device counts, each in one machine

    @property
    def mounts(self) -> dict[str, str]:
        """The task's ``file_mounts``: remote folder -> local folder."""
        return {s.remote: str(s.local) for s in self.shipped}


@dataclass(frozen=True)
class Candidate:
    """One GPU to measure: its SkyPilot request, time, caps and price."""

    gpu: Gpu
    sky: SkyName
    gpus_per_node: int
    nodes: int
    expected_s: float
    setup_cap_s: int
    run_cap_s: int
    idle_minutes: int  # torn down this long after its job ends (autodown)
    most_s: float  # the most it can bill: start-up + both caps (+ kill grace) + idle minutes
    rental: Rental | None  # one node, at the catalog's cheapest on-demand price
    price_date: str | None

    @property
    def name(self) -> str:
        """The task's and its cluster's name: "gpuscout-h100-sxm-8x2"."""
        return f"gpuscout-{self.gpu.id}-{self.gpus_per_node}x{self.nodes}"

    def usd(self, seconds: float) -> float | None:
        """What ``seconds`` of every node cost at the catalog's price, or None without one."""
        if self.rental is None:
            return None
        return self.rental.usd_per_hour * self.nodes * seconds / 3600


def plan_candidate(
    catalog: Catalog, gpu: Gpu, sky: SkyName, gpus_per_node: int, nodes: int,
    bench: Bench, o: Overheads,
) -> Candidate:  # fmt: skip
    """Time, caps and price of measuring ``bench`` on ``nodes`` x ``gpus_per_node`` ``gpu``."""
    expected = o.startup_s + o.install_s + o.warmup_s + bench.measure_s
    setup_cap = math.ceil(o.install_s * o.cap_factor)
    run_cap = math.ceil((o.warmup_s + bench.measure_s) * o.cap_factor)
    most = o.startup_s + setup_cap + run_cap + KILL_AFTER_S + o.idle_minutes * 60
    rental = cheapest_rental(catalog, gpu, gpus_per_node, one_machine=True)  # a node
    return Candidate(gpu, sky, gpus_per_node, nodes, expected, setup_cap, run_cap,
                     o.idle_minutes, most, rental, _price_date(catalog, gpu, rental))  # fmt: skip


def _price_date(catalog: Catalog, gpu: Gpu, rental: Rental | None) -> str | None:
    """When the provider's cheapest on-demand price was seen (else retrieved)."""
    if rental is None:
        return None
    rows = [
        p
        for p in catalog.prices_for(gpu.id)
        if p.provider == rental.provider and p.kind == "on_demand" and p.usd_per_gpu_hour
    ]
    p = min(rows, key=lambda r: r.usd_per_gpu_hour or 0.0)  # fmt: skip
    return f"seen {p.observed_on}" if p.observed_on else f"retrieved {p.retrieved_on}"


def install_line(version: str, backend: str, from_checkout: bool = False) -> str:
    """The pip command that installs this gpuscout and a GPU build of the backend: from the
    package index at this version, or from the checkout SkyPilot synced as the task's
    ``workdir`` (a development version the index may not have)."""
    what = '".[{}]"' if from_checkout else f'"gpuscout[{{}}]=={version}"'
    if backend == "jax":
        return f'pip install {what.format("jax")} "jax[cuda12]"'
    if backend == "torch":  # the package index's Linux wheel of torch is its CUDA build
        return f"pip install {what.format('torch')}"
    return f"pip install {what.format('cuda')}"


def checkout() -> Path | None:
    """The source checkout this gpuscout runs from (a git work tree whose pyproject.toml is
    gpuscout's), or None where it runs from an installed package."""
    root = Path(__file__).resolve().parents[3]
    project = root / "pyproject.toml"
    try:
        named = 'name = "gpuscout"' in project.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if named and (root / ".git").exists() else None


def task(
    c: Candidate, bench: Bench, version: str, workdir: Path | None = None
) -> dict[str, object]:
    """The SkyPilot task (as its YAML holds it) that measures ``bench`` on ``c``; with
    ``workdir`` (the user's checkout), SkyPilot syncs it to the node and setup installs it."""
    db = f'--db "{REMOTE_HOME}/runs.sqlite"'
    extra = ["--cluster", "skypilot"] if c.nodes > 1 else []
    command = " ".join(shlex.quote(a) for a in ("gpuscout", "bench", *bench.args, *extra))
    # your files' folders first on the path: a model's neighbouring modules import there
    path = ":".join(s.remote for s in bench.shipped if not s.alone)  # folders, not files
    run = "\n".join([
        *([f'export PYTHONPATH="{path}${{PYTHONPATH:+:$PYTHONPATH}}"'] if path else []),
        f'mkdir -p "{REMOTE_HOME}"',
        f"timeout --kill-after={KILL_AFTER_S} {c.run_cap_s}s {command} {db}",
        "status=$?  # 124: the cap stopped it; the interrupted run is stored all the same",
        'if [ "${SKYPILOT_NODE_RANK:-0}" = 0 ]; then',
        f'  gpuscout runs export {db} -o "{REMOTE_HOME}/${EXPORT_ENV}"',
        "fi",
        "exit $status",
    ])  # fmt: skip
    setup = "\n".join(
        [
            "set -e",
            f"timeout {c.setup_cap_s}s {install_line(version, bench.backend, workdir is not None)}",
        ]
    )
    resources: dict[str, object] = {"accelerators": c.sky.accelerators(c.gpus_per_node)}
    if c.sky.cloud:
        resources["cloud"] = c.sky.cloud
    out: dict[str, object] = {
        "name": c.name,
        **({"workdir": str(workdir)} if workdir is not None else {}),
        "resources": resources,
        "num_nodes": c.nodes,
        "envs": {EXPORT_ENV: f"{c.name}.json", IDLE_ENV: str(c.idle_minutes)},
    }
    if bench.mounts:
        out["file_mounts"] = dict(bench.mounts)
    out["setup"] = setup + "\n"
    out["run"] = run + "\n"
    return out


def yaml_text(data: dict[str, object], comments: list[str]) -> str:
    """The task as YAML, after ``comments``: PyYAML's safe dumper where PyYAML is installed
    (SkyPilot needs it, so it is there wherever a task is launched), with scripts as literal
    blocks; else JSON, which is YAML too, so the file is valid either way."""
    head = "".join(f"# {line}\n" if line else "#\n" for line in comments)
    try:
        import importlib

        yaml = importlib.import_module("yaml")
    except ImportError:
        import json

        return head + json.dumps(data, indent=2) + "\n"

    class Dumper(yaml.SafeDumper):  # type: ignore[misc,name-defined]
        pass

    def literal(dumper: object, text: str) -> object:
        style = "|" if "\n" in text else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)  # type: ignore[attr-defined]

    Dumper.add_representer(str, literal)
    body: str = yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False)
    return head + body


__all__ = [
    "REMOTE_INPUTS", "Bench", "Candidate", "checkout", "install_line", "plan_candidate", "task",
    "yaml_text",
]  # fmt: skip
