"""``gpuscout cloud``: the task files a plan writes (read back with PyYAML), its refusals, the
import of exported runs, the refusal without SkyPilot, and the time estimator.

In-process (``run_in_process``): none of these measure, and none may import TensorFlow.
SkyPilot is not installed here and no cloud is reached: ``cloud run`` is checked only by its
dry run and its refusal, and the estimator is called with a stand-in for ``sky.Resources``
(a fake of SkyPilot's class, which has no CPU equivalent here: SkyPilot is not installed).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from gpuscout.cloud import time_estimator
from gpuscout.core.errors import UserError
from gpuscout.predict.job import JobSpec
from gpuscout.store import Store
from tests.conftest import run_in_process
from tests.store.test_store import _result


def _plan(out: Path, *args: str) -> tuple[int, str, str]:
    had_tf = "tensorflow" in sys.modules
    r = run_in_process("cloud", "plan", "--out", str(out), *args)
    assert had_tf or "tensorflow" not in sys.modules, "cloud plan imported TensorFlow"
    return r.code, r.out, r.err


def test_plan_writes_one_task_per_gpu_that_yaml_reads_back(tmp_path: Path) -> None:
    code, out, err = _plan(
        tmp_path, "--gpus", "h100-sxm,l40s", "--gpus-per-node", "8", "--nodes", "2",
        "--max-usd", "100", "--", "bench", "--workload", "mlp", "--seconds", "30",
    )  # fmt: skip
    assert code == 0, err
    h100 = yaml.safe_load((tmp_path / "gpuscout-h100-sxm-8x2.yaml").read_text())
    l40s = yaml.safe_load((tmp_path / "gpuscout-l40s-8x2.yaml").read_text())
    assert h100["resources"] == {"accelerators": "H100:8"}
    assert l40s["resources"] == {"accelerators": "L40S:8"}
    assert h100["num_nodes"] == 2
    # planned from this checkout (the tests run from one): SkyPilot syncs it, setup installs it
    root = Path(__file__).resolve().parents[2]
    assert h100["workdir"] == str(root) and 'pip install ".[cuda]"' in h100["setup"]
    assert f"installs gpuscout from your checkout {root}" in out
    assert "timeout 480s pip install" in h100["setup"]  # install cap: 2 x 240 s assumed
    run = h100["run"]
    # bench under its cap (2 x (90 s warm-up + 30 s)); one worker per node, on every GPU it
    # has (bench refuses --devices beside a cluster's workers), SkyPilot's rendezvous
    assert "timeout --kill-after=30 240s gpuscout bench --workload mlp --seconds 30" in run
    assert "--cluster skypilot" in run and "--devices" not in run
    assert 'gpuscout runs export --db "$HOME/gpuscout-cloud/runs.sqlite"' in run
    assert h100["envs"]["GPUSCOUT_CLOUD_EXPORT"] == "gpuscout-h100-sxm-8x2.json"
    # each part of the time said, the price with its provider and date, the caps
    assert "start-up 5 min 00 s + install 4 min 00 s + warm-up 90 s + measurement 30 s" in out
    assert "price seen 2026-09-25" in out
    assert "at most" in out
    assert "runpod's H100 is h100-pcie" in out  # where the name means another part


def test_plan_for_your_model_mounts_its_folder_on_one_node(tmp_path: Path) -> None:
    model = tmp_path / "my.py"
    model.write_text("def build(): ...\n")  # never loaded by the plan
    code, _, err = _plan(
        tmp_path / "out", "--gpus", "rtx-4090", "--",
        "bench", "--model", f"{model}:build", "--seconds", "60",
    )  # fmt: skip
    assert code == 0, err
    task = yaml.safe_load((tmp_path / "out" / "gpuscout-rtx-4090-1x1.yaml").read_text())
    assert task["resources"] == {"accelerators": "RTX4090:1"}
    # the file's folder (the modules beside it travel too: tests/cloud/test_inputs.py)
    assert task["file_mounts"] == {"/tmp/gpuscout-inputs/model": str(tmp_path)}
    assert "--model /tmp/gpuscout-inputs/model/my.py:build" in task["run"]
    assert "--cluster" not in task["run"] and "--devices" not in task["run"]  # one GPU


def test_plan_pins_the_provider_whose_name_alone_means_the_gpu(tmp_path: Path) -> None:
    code, _, err = _plan(tmp_path, "--gpus", "h100-pcie", "--", "bench", "--seconds", "10")
    assert code == 0, err
    task = yaml.safe_load((tmp_path / "gpuscout-h100-pcie-1x1.yaml").read_text())
    assert task["resources"] == {"accelerators": "H100:1", "cloud": "runpod"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--gpus", "h100-sxm,l40s", "--gpus-per-node", "8", "--max-usd", "1"),
         "gpuscout-h100-sxm-8x1 could cost up to $"),
        (("--gpus", "a100-40gb-pcie"), "--gpus a100-40gb-pcie: SkyPilot has no accelerator"),
        (("--gpus", "l4", "--gpus-per-node", "16"), "one l4 machine holds at most 8"),
    ],
)  # fmt: skip
def test_plan_refusals_write_nothing(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    code, _, err = _plan(tmp_path / "out", *args, "--", "bench", "--seconds", "60")
    assert code == 2 and says in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_collect_imports_runs_exported_from_another_store(tmp_path: Path) -> None:
    other = tmp_path / "node.sqlite"
    with Store(other) as store:
        store.save(_result())
        store.save(_result(1))
    results = tmp_path / "plan" / "results"
    export = run_in_process("runs", "export", "--db", str(other),
                            "-o", str(results / "gpuscout-l4-1x1.json"))  # fmt: skip
    assert export.code == 0, export.err
    mine = tmp_path / "mine.sqlite"
    r = run_in_process("cloud", "collect", str(tmp_path / "plan"), "--db", str(mine))
    assert r.code == 0, r.err
    assert "2 run(s) from candidate gpuscout-l4-1x1" in r.out
    listed = run_in_process("runs", "list", "--db", str(mine), "--json")
    assert [row["batch_size"] for row in json.loads(listed.out)] == [33, 32]


def test_collect_refuses_a_bad_file_before_storing_any(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_text("{not json")
    r = run_in_process("cloud", "collect", str(tmp_path), "--db", str(tmp_path / "m.sqlite"))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert not (tmp_path / "m.sqlite").exists()


def test_run_without_skypilot_is_one_line_and_dry_run_says_what(tmp_path: Path) -> None:
    assert _plan(tmp_path, "--gpus", "l4", "--", "bench", "--seconds", "10")[0] == 0
    r = run_in_process("cloud", "run", str(tmp_path))
    assert r.code == 2, r.err
    assert r.err.strip().splitlines() == [
        "gpuscout: error: SkyPilot is not installed: pip install 'gpuscout[cloud]'. To fix: "
        "install it (and enable a cloud: sky check), or see the plan with --dry-run."
    ]
    dry = run_in_process("cloud", "run", str(tmp_path), "--dry-run")
    assert dry.code == 0, dry.err
    assert "sky.launch(task, cluster_name='gpuscout-l4-1x1', down=True, " in dry.out
    assert "idle_minutes_to_autostop=5" in dry.out


@dataclass
class _Resources:
    """A stand-in for ``sky.Resources`` (SkyPilot is not installed here): the two attributes
    the estimator reads."""

    accelerators: dict[str, float] | None
    cloud: str | None = None


def test_time_estimator_predicts_seconds_as_skypilot_asks() -> None:
    est = time_estimator(JobSpec(workload="resnet50", epochs=1))
    h100, l4 = est(_Resources({"H100": 8})), est(_Resources({"L4": 1}))
    assert isinstance(h100, int) and 0 < h100 < l4
    # the same name at RunPod is the PCIe part: predicted as that one, so slower
    assert est(_Resources({"H100": 1}, cloud="RunPod")) > est(_Resources({"H100": 1}))
    with pytest.raises(UserError, match="'TPU-V5' is no catalog GPU"):
        est(_Resources({"TPU-V5": 8}))
    with pytest.raises(UserError, match="no single accelerator"):
        est(_Resources(None))
    lenient = time_estimator(JobSpec(workload="resnet50", epochs=1), fallback_seconds=3600)
    assert lenient(_Resources({"TPU-V5": 8})) == 3600
    assert lenient(_Resources({"L4": 0.5})) == 3600


def test_estimator_command_prints_seconds_per_skypilot_name() -> None:
    r = run_in_process("cloud", "estimator", "--workload", "resnet50", "--epochs", "1", "--json")
    assert r.code == 0, r.err
    rows = {row["skypilot"]: row for row in json.loads(r.out)}
    assert rows["H100"]["gpu"] == "h100-sxm" and rows["H100"]["seconds"] > 0
    assert rows["RTX4090"]["gpu"] == "rtx-4090"


def test_skypilot_reads_the_task_files(tmp_path: Path) -> None:
    """SkyPilot's own parser accepts what plan writes; skipped where SkyPilot is not installed
    (it is not, in this project's test environment: pip install 'gpuscout[cloud]')."""
    sky = pytest.importorskip("sky", reason="SkyPilot is not installed (gpuscout[cloud])")
    assert _plan(tmp_path, "--gpus", "l4,h100-pcie", "--nodes", "2", "--", "bench")[0] == 0
    for path in sorted(tmp_path.glob("*.yaml")):
        task = sky.Task.from_yaml(str(path))
        assert task.num_nodes == 2
    # and its optimizer takes gpuscout's predicted time for a task's resources
    from gpuscout.cloud import time_estimator
    from gpuscout.predict.job import JobSpec

    estimate = time_estimator(JobSpec(workload="resnet50", epochs=1, samples=1_281_167))
    task = sky.Task(run="true").set_resources(sky.Resources(accelerators="L4:1"))
    task.set_time_estimator(estimate)
    fast, slow = (estimate(sky.Resources(accelerators=a)) for a in ("H100:8", "L4:1"))
    assert task.estimate_runtime(next(iter(task.resources))) == slow > fast > 0


def test_dry_run_needs_no_yaml_when_the_plan_was_written_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without PyYAML (no extra installs it but gpuscout[cloud]) cloud plan writes its task
    files as JSON, which is YAML too; cloud run --dry-run reads them back without PyYAML."""
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml raises ImportError
    assert _plan(tmp_path, "--gpus", "l4", "--", "bench", "--seconds", "10")[0] == 0
    (task,) = tmp_path.glob("*.yaml")
    lines = task.read_text().splitlines()  # JSON after the comment lines
    assert json.loads("\n".join(x for x in lines if not x.startswith("#")))["name"]
    dry = run_in_process("cloud", "run", str(tmp_path), "--dry-run")
    assert dry.code == 0, dry.err
    assert "sky.launch(task, cluster_name='gpuscout-l4-1x1', down=True, " in dry.out


def test_a_plan_from_an_installed_package_installs_that_version_from_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not run from a checkout (``checkout()`` finds none, as for a pip-installed gpuscout):
    no workdir, and setup pins the version that planned it."""
    import gpuscout.cloud.plan as plan

    monkeypatch.setattr(plan, "checkout", lambda: None)
    assert _plan(tmp_path, "--gpus", "l4", "--", "bench", "--seconds", "10")[0] == 0
    (path,) = tmp_path.glob("*.yaml")
    task = yaml.safe_load(path.read_text())
    assert "workdir" not in task
    assert f'pip install "gpuscout[cuda]=={version("gpuscout")}"' in task["setup"]
