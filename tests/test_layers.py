"""The layer rule of docs/architecture.md, checked over every module of the package.

The rule: gpuscout is a pipeline, catalog → measure → store → predict → price → advise → report,
and a stage imports only stages to its left. The side stages sit at a place in that order:
``diagnose``, ``scale`` and ``publish`` are built on measure and store (after store);
``audit`` checks claims with predict (beside price); ``cloud`` beside advise. The ground floor
(``core``: records, units, errors, ranges, ...; and ``workloads``) may be imported by anyone
and imports no stage. Orchestrators (cli, scout, assemble, and the entry points) may import
anything. Every import is read with ``ast``, function-level ones included (the project imports
lazily); imports under ``if TYPE_CHECKING:`` are left out (they do not run). What breaks the
rule on purpose is in ``EXCEPTIONS``, each with its reason: any other import against the order
fails, so a new one is a decision to write down here, not an accident.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "gpuscout"

# Left to right; equal ranks may not import each other (they are side by side).
RANK = {
    "catalog": 0,
    "measure": 1,
    "store": 2,
    "diagnose": 3,  # doctor and soak start measurements through the measuring core
    "scale": 3,  # launch and scaling sweeps: measurements, stored
    "publish": 3,  # a stored run's series to TensorBoard and MLflow
    "predict": 4,
    "audit": 5,  # published claims checked against the catalog and predict
    "price": 5,
    "advise": 6,
    "cloud": 6,  # SkyPilot tasks to measure rented GPUs: catalog, predict, price, store
    "report": 7,
}
# Imported by anyone; they import only each other (and, for type hints only, a stage).
SHARED = {"gpuscout", "core", "workloads"}
# May import any stage: they compose the pipeline.
ORCHESTRATORS = {"cli", "scout", "assemble", "__main__", "keras"}

# (importing module prefix, imported module prefix): why it is allowed.
EXCEPTIONS = {
    ("gpuscout.measure.backends", "gpuscout.predict.hlo"):
        "a backend counts its step's FLOPs (for MFU) with predict's HLO cost model",
    ("gpuscout.measure.backends.keras.callback", "gpuscout.predict"):
        "ScoutCallback predicts the user's model on other GPUs at the end of fit()",
    ("gpuscout.measure.backends.keras.callback", "gpuscout.store"):
        "ScoutCallback runs inside the user's fit(), with no parent process to store its run",
    ("gpuscout.measure.backends", "gpuscout.diagnose"):
        "a backend's doctor and soak fill in diagnose's backend-neutral records and analysis",
    ("gpuscout.measure", "gpuscout.scale.distribute"):
        "the core checks a run's data-parallel settings; distribute is a leaf (records only)",
}  # fmt: skip


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers inside ``if TYPE_CHECKING:`` blocks (type hints only: never run)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports(module: str, text: str, is_package: bool) -> set[str]:
    """Every gpuscout module ``text`` imports, at any depth (functions included), resolved:
    ``from gpuscout.scale import distribute`` is ``gpuscout.scale.distribute`` alone (the
    package's ``__init__`` runs too, but the packages' are lazy), relative imports are made
    absolute."""
    tree = ast.parse(text)
    skip = _type_checking_lines(tree)
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            subs = {f"{base}.{a.name}" for a in node.names if _is_module(f"{base}.{a.name}")}
            found.update(subs if len(subs) == len(node.names) else {base, *subs})
    return {name for name in found if name == "gpuscout" or name.startswith("gpuscout.")}


def _is_module(name: str) -> bool:
    path = SRC.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "gpuscout"


def violations(module: str, imported: set[str]) -> list[str]:
    """Each import of ``module`` against the rule and not an allowed exception."""
    here = _top(module)
    if here in ORCHESTRATORS:
        return []
    bad = []
    for name in sorted(imported):
        there = _top(name)
        if there == here or there in SHARED:
            continue
        if here in SHARED:
            allowed = False  # a shared module imports no stage
        elif there in ORCHESTRATORS:
            allowed = False  # nothing below the CLI imports it
        else:
            allowed = RANK[there] < RANK[here]
        excepted = any(
            (module + ".").startswith(a + ".") and (name + ".").startswith(b + ".")
            for a, b in EXCEPTIONS
        )
        if not allowed and not excepted:
            bad.append(f"{module} imports {name}")
    return bad


def _all_modules() -> dict[str, tuple[str, bool]]:
    return {_module_name(p): (p.read_text(), p.name == "__init__.py") for p in SRC.rglob("*.py")}


def test_every_module_keeps_the_layer_rule() -> None:
    modules = _all_modules()
    assert len(modules) > 100  # the walk found the package
    tops = {_top(m) for m in modules}
    unplaced = tops - set(RANK) - SHARED - ORCHESTRATORS
    assert not unplaced, f"place each new top-level module in the rule: {sorted(unplaced)}"
    bad = [v for m, (text, pkg) in modules.items() for v in violations(m, imports(m, text, pkg))]
    assert not bad, "\n".join(bad)


def test_every_exception_is_still_needed() -> None:
    """An exception nothing uses any more is removed, so the list stays the truth."""
    modules = _all_modules()
    edges = {(m, n) for m, (text, pkg) in modules.items() for n in imports(m, text, pkg)}
    for a, b in EXCEPTIONS:
        assert any(
            (m + ".").startswith(a + ".") and (n + ".").startswith(b + ".") for m, n in edges
        ), f"unused exception: {a} -> {b}"


def test_the_walk_catches_a_planted_violation() -> None:
    """Self-check: a report import inside predict, even inside a function, or a CLI import
    in audit (the one this rule removed), fails; a stage to the left and a type-only import
    do not."""
    planted = "def f():\n    import gpuscout.report\n    from gpuscout.report import terminal\n"
    found = imports("gpuscout.predict.roofline", planted, is_package=False)
    assert {"gpuscout.report", "gpuscout.report.terminal"} <= found
    assert violations("gpuscout.predict.roofline", found) == [
        "gpuscout.predict.roofline imports gpuscout.report",
        "gpuscout.predict.roofline imports gpuscout.report.terminal",
    ]
    relative = imports("gpuscout.audit.claims", "from ..cli import parser\n", is_package=False)
    assert violations("gpuscout.audit.claims", relative) == [
        "gpuscout.audit.claims imports gpuscout.cli.parser"
    ]
    fine = "from gpuscout.catalog import load_catalog\nfrom typing import TYPE_CHECKING\n"
    fine += "if TYPE_CHECKING:\n    from gpuscout.report import terminal\n"
    assert violations("gpuscout.predict.roofline", imports("gpuscout.predict.x", fine, False)) == []
    shared = imports("gpuscout.core.units", "from gpuscout.store import Store\n", is_package=False)
    assert violations("gpuscout.core.units", shared) == [
        "gpuscout.core.units imports gpuscout.store"
    ]


ARCHITECTURE = SRC.parents[1] / "docs" / "architecture.md"


def test_the_architecture_page_names_the_same_order_and_exceptions() -> None:
    """docs/architecture.md is what a reader trusts: its order line is this test's ``RANK``
    (steps left to right, side-by-side stages on one step), it lists exactly these exceptions,
    and it names every orchestrator and the ground floor's folders."""
    text = ARCHITECTURE.read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("catalog → ")]
    steps = [{s.strip() for s in step.split(",")} for step in line.split("→")]
    by_rank: dict[int, set[str]] = {}
    for stage, rank in RANK.items():
        by_rank.setdefault(rank, set()).add(stage)
    assert steps == [by_rank[r] for r in sorted(by_rank)], line
    listed = set(_EXCEPTION_LINE.findall(text))
    assert listed == set(EXCEPTIONS), "the page and EXCEPTIONS differ"
    for name in (*ORCHESTRATORS, "core/", "workloads/"):
        assert name in text, name


_EXCEPTION_LINE = re.compile(r"^- `(gpuscout[\w.]*)` → `(gpuscout[\w.]*)`:", re.MULTILINE)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph`` (module -> modules it imports), or None."""
    import graphlib

    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_the_predict_core_imports_in_one_direction() -> None:
    """Issue 41: nine files at predict's centre imported each other (calibrate <->
    calibration_points, calibrate -> out_of_sample -> calibrate, ... -> request -> session ->
    calibrate). One direction now: data -> kernel model -> calibration -> session -> request.
    Every import counts, function-level ones too; type-only imports do not."""
    modules = _all_modules()
    graph = {
        m: {n for n in imports(m, text, pkg) if n.startswith("gpuscout.predict.")}
        for m, (text, pkg) in modules.items()
        if m.startswith("gpuscout.predict.")
    }
    assert len(graph) > 25  # the walk found predict's modules
    assert _cycle(graph) is None, f"an import cycle in predict: {' -> '.join(_cycle(graph) or [])}"
    # the order the issue names, module by module
    order = ["calibration_points", "calibrate", "out_of_sample", "uncertainty", "predictor",
             "anchoring", "session", "request"]  # fmt: skip
    for i, low in enumerate(order):
        for high in order[i + 1 :]:
            assert f"gpuscout.predict.{high}" not in graph[f"gpuscout.predict.{low}"], (low, high)
    # self-check: the test sees a cycle planted through a function-level import
    planted = "def f():\n    from gpuscout.predict.request import predict_for\n"
    graph["gpuscout.predict.calibrate"] |= imports("gpuscout.predict.calibrate", planted, False)
    assert _cycle(graph) is not None


# The backends' folders (issue 44): what imports a framework, reached by the rest of gpuscout
# only through ``gpuscout.measure.backends.get`` and its protocol (``backends/protocol.py``).
BACKEND_FOLDERS = ("jax", "keras", "tensorflow", "torch")
# Outside those folders, the only modules that import one, each with its reason.
BACKEND_IMPORTERS = {
    "gpuscout.keras": "the public ScoutCallback is a Keras class, handed out lazily from the "
    "backend that defines it",
    "gpuscout.publish.to_tensorboard": "TensorBoard reads TensorFlow's event files, so the "
    "writer is TensorFlow's",
}


def _backend_folder(module: str) -> str | None:
    parts = module.split(".")
    if parts[:3] == ["gpuscout", "measure", "backends"] and len(parts) > 3:
        return parts[3] if parts[3] in BACKEND_FOLDERS else None
    return None


def _collapsed(modules: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """The import graph with each backend folder one node (``backend:jax``), every other
    module its own."""

    def node(m: str) -> str:
        folder = _backend_folder(m)
        return f"backend:{folder}" if folder else m

    graph: dict[str, set[str]] = {}
    for m, (text, pkg) in modules.items():
        here = node(m)
        graph.setdefault(here, set()).update(
            node(n) for n in imports(m, text, pkg) if node(n) != here
        )
    return graph


def _strong_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of ``graph`` with more than one node (scipy's)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    names = sorted(set(graph) | {n for targets in graph.values() for n in targets})
    index = {n: i for i, n in enumerate(names)}
    rows = [index[a] for a, targets in graph.items() for _ in targets]
    cols = [index[b] for targets in graph.values() for b in targets]
    matrix = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(names), len(names)))
    _, labels = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, set[str]] = {}
    for name, label in zip(names, labels, strict=True):
        groups.setdefault(int(label), set()).add(name)
    return [g for g in groups.values() if len(g) > 1]


def _circles_through_backends(graph: dict[str, set[str]]) -> list[set[str]]:
    return [g for g in _strong_components(graph) if any(n.startswith("backend:") for n in g)]


def test_no_import_circle_crosses_a_backend_folder() -> None:
    """Issue 44: the backends imported the measuring core, and the core imported them back
    (tensorflow <-> keras <-> jax <-> measure/benchmark, 11 files). Now a backend imports the
    core and the shared Keras folder; nothing imports a backend back but through the protocol,
    function-level imports included. The test sees a circle planted through a function."""
    modules = _all_modules()
    graph = _collapsed(modules)
    assert {f"backend:{f}" for f in BACKEND_FOLDERS} <= set(graph)
    circles = _circles_through_backends(graph)
    assert not circles, f"import circles through a backend folder: {circles}"
    planted = "def f():\n    from gpuscout.measure.backends.jax import backend\n"
    graph["gpuscout.measure.benchmark"] |= {
        "backend:jax" for n in imports("gpuscout.measure.benchmark", planted, False)
        if _backend_folder(n) == "jax"
    }  # fmt: skip
    assert _circles_through_backends(graph), "the planted circle was not seen"


def test_measure_predict_and_scale_reach_a_backend_only_through_its_protocol() -> None:
    """No module outside the backends' folders imports one (at any depth, in a function too),
    but the two in ``BACKEND_IMPORTERS``: the core asks ``backends.get(name)`` instead."""
    modules = _all_modules()
    bad = sorted(
        f"{m} imports {n}"
        for m, (text, pkg) in modules.items()
        if _backend_folder(m) is None and m not in BACKEND_IMPORTERS
        for n in imports(m, text, pkg)
        if _backend_folder(n) is not None
    )
    assert not bad, "\n".join(bad)
    for importer in BACKEND_IMPORTERS:  # each still needed
        text, pkg = modules[importer]
        assert any(_backend_folder(n) for n in imports(importer, text, pkg)), importer
