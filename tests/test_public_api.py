"""The public API and the layering rule: only ``measure/backends/`` imports a framework."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import gpuscout
from tests.conftest import BLOCK_TF

PACKAGE = Path(gpuscout.__file__).parent
FRAMEWORKS = ("tensorflow", "keras", "jax", "jaxlib", "torch")


def framework_imports(package: Path) -> list[str]:
    """Every import of a framework outside ``measure/backends/``, as ``file:line imports X``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel.startswith("measure/backends/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [
                f"{rel}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in FRAMEWORKS
            ]
    return found


def test_all_is_sorted_and_resolves() -> None:
    assert gpuscout.__all__ == sorted(gpuscout.__all__)
    for name in gpuscout.__all__:
        assert getattr(gpuscout, name) is not None


def test_only_the_backends_import_a_framework() -> None:
    """The layering rule, over every module of the package: outside ``measure/backends/``
    nothing imports TensorFlow, Keras, JAX or PyTorch, not even inside a function."""
    assert framework_imports(PACKAGE) == []


def test_the_rule_catches_a_planted_import(tmp_path: Path) -> None:
    """The rule's walker finds an ``import tensorflow`` hidden in a function of a core module,
    and lets the same import stand inside a backend."""
    tree = tmp_path / "gpuscout"
    shutil.copytree(PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    planted = tree / "predict" / "planted.py"
    planted.write_text("def f():\n    import tensorflow as tf\n    return tf\n")
    (tree / "measure" / "backends" / "tensorflow" / "planted.py").write_text("import keras\n")
    (tree / "report" / "planted_from.py").write_text("from jax import numpy\n")
    (tree / "store" / "planted_torch.py").write_text("def f():\n    from torch import nn\n")
    found = framework_imports(tree)
    assert found == [
        "predict/planted.py:2 imports tensorflow",
        "report/planted_from.py:1 imports jax",
        "store/planted_torch.py:2 imports torch",
    ]


def test_every_module_outside_the_backends_imports_without_tensorflow() -> None:
    """Not only no import statement: importing each one (as ``--help`` and every command that
    does not measure do) loads neither TensorFlow, Keras, JAX nor PyTorch, with all blocked."""
    modules = sorted(
        "gpuscout."
        + ".".join(p.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__")
        for p in PACKAGE.rglob("*.py")
        if "backends" not in p.relative_to(PACKAGE).parts[:2]
    )
    assert "gpuscout.cli.bench" in modules and "gpuscout.measure.child" in modules
    code = (
        BLOCK_TF
        + "".join(f"import {m.removesuffix('.__init__')}\n" for m in modules)
        + "import gpuscout.measure.child\n"
        + ("assert not {'tensorflow', 'keras', 'jax', 'torch'} & set(sys.modules)\n")
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_blocker_really_blocks() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", BLOCK_TF + "import tensorflow"], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "blocked by the test" in proc.stderr


def test_cli_blocker_reaches_child_processes() -> None:
    """run_cli(block_tf=True) blocks TensorFlow in the measuring child too: a real bench fails."""
    from tests.conftest import run_cli

    r = run_cli("bench", "-w", "mlp", "--steps", "3", block_tf=True)
    assert r.code != 0 and "TensorFlow is not installed" in r.err


def test_specs_and_audit_stay_light() -> None:
    """The catalog commands load neither TensorFlow, nor SciPy, nor the store (SQLAlchemy)."""
    code = BLOCK_TF + (
        "import io, contextlib\n"
        "from gpuscout.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['specs', '4090', 'h100']) == 0\n"
        "    assert main(['audit', '--gpu', 't4', '--workload', 'resnet50',"
        " '--epoch-seconds', '900']) == 0\n"
        "heavy = {'tensorflow', 'scipy', 'sqlalchemy'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_a_bench_parent_does_not_pay_for_scipy_stats() -> None:
    """``bench``'s own process parses, starts the child and stores: scipy.stats (a second to
    import) is the measuring child's, imported there before the clock starts."""
    code = BLOCK_TF + (
        "import gpuscout.cli.bench, gpuscout.cli.scout, gpuscout.measure.runner\n"
        "assert 'scipy.stats' not in sys.modules, 'scipy.stats imported'\n"
        "from gpuscout.measure.protocol import Protocol, StopRule\n"
        "Protocol(StopRule())\n"
        "assert 'scipy.stats' in sys.modules\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
