"""``cloud plan`` forwards bench's options only in full and refuses any the plan sets itself,
however spelled; checks ``--scaling`` against the GPUs a machine gets; and prints commands a
shell reads back as they were meant (the folder one word)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from tests.conftest import run_in_process


def _plan(out: Path, *args: str) -> tuple[int, str, str]:
    had_tf = "tensorflow" in sys.modules
    r = run_in_process("cloud", "plan", "--out", str(out), *args)
    assert had_tf or "tensorflow" not in sys.modules, "cloud plan imported TensorFlow"
    return r.code, r.out, r.err


@pytest.mark.parametrize(
    ("bench", "says"),
    [
        (("--task-i", "1"), "bench --task-i: an abbreviation of --task-index; the plan forwards "
                            "options only in full. To fix: write it in full: --task-index."),
        (("--clus", "slurm"), "bench --clus: an abbreviation of --cluster"),
        (("--wor=a:1,b:2",), "bench --wor: an abbreviation of"),
        (("--dev", "2"), "bench --dev: an abbreviation of --device or --devices"),
        (("--seconds", "30", "--workl", "mlp"), "bench --workl: an abbreviation of --workload"),
    ],
)  # fmt: skip
def test_options_go_in_full_and_none_the_plan_sets(
    tmp_path: Path, bench: tuple[str, ...], says: str
) -> None:
    code, _, err = _plan(tmp_path / "out", "--gpus", "l4", "--", "bench", *bench)
    assert code == 2 and says in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--", "bench", "--scaling", "1,2"),
         "bench --scaling 1,2: 2 GPU(s), more than the 1 of --gpus-per-node 1"),
        (("--gpus-per-node", "4", "--", "bench", "--scaling", "1,2,4,8"),
         "8 GPU(s), more than the 4 of --gpus-per-node 4: each count is measured in one "
         "machine. To fix: plan --gpus-per-node 8, or drop the larger counts."),
    ],
)  # fmt: skip
def test_scaling_counts_fit_the_gpus_of_a_machine(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    code, _, err = _plan(tmp_path / "out", "--gpus", "l4", *args)
    assert code == 2 and says in err, err
    assert not (tmp_path / "out").exists()


def test_the_next_commands_are_shell_quoted(tmp_path: Path) -> None:
    out_dir = tmp_path / "my plans; touch X #"
    code, out, err = _plan(
        out_dir, "--gpus", "l4", "--gpus-per-node", "4", "--",
        "bench", "--scaling", "1,2,4", "--seconds", "10", "--note", "--db is mine",
    )  # fmt: skip
    assert code == 0, err
    # options in full, and a value that only looks like one, are forwarded as given
    (task,) = out_dir.glob("*.yaml")
    assert "--scaling 1,2,4 --seconds 10 --note '--db is mine'" in task.read_text()
    (line,) = [x for x in out.splitlines() if x.startswith("next: ")]
    run = line.removeprefix("next: ").split(" (or ")[0]
    collect = line.split("), then ")[1]
    assert shlex.split(run) == ["gpuscout", "cloud", "run", str(out_dir)]
    assert shlex.split(collect) == ["gpuscout", "cloud", "collect", str(out_dir)]


def test_a_plain_pytorch_model_is_planned_on_torch_and_one_device(tmp_path: Path) -> None:
    """A --model whose file imports torch, not Keras, runs on PyTorch on the node: the task
    installs gpuscout[torch], and bench gets no --devices (PyTorch measures one device)."""
    model = Path(__file__).parents[2] / "examples" / "models" / "torch_cnn.py"
    out_dir = tmp_path / "plans"
    code, _, err = _plan(
        out_dir, "--gpus", "l4", "--gpus-per-node", "2", "--",
        "bench", "--model", f"{model}:build", "--seconds", "10",
    )  # fmt: skip
    assert code == 0, err
    (task,) = out_dir.glob("*.yaml")
    text = task.read_text()
    assert 'pip install ".[torch]"' in text and "torch_cnn.py:build --seconds 10" in text
    assert "--devices" not in text
