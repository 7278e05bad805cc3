"""Options no larger than the job (issue 43, and its review): what the user typed and cannot
run is refused (tests/adversarial/test_job_size_rows.py); what gpuscout chose itself is fitted
to the job and said, never refused."""

from __future__ import annotations

from tests.conftest import run_in_process


def _advise(*args: str) -> tuple[str, str]:
    out = run_in_process("advise", "--workload", "resnet50", "--json", *args)
    assert out.code == 0, out.err
    data = out.json()
    return data["headline"], "\n".join(data["assumptions"])


def test_default_counts_above_the_jobs_samples_are_left_out_and_said() -> None:
    _, notes = _advise("--samples", "4", "-b", "1")
    assert "GPU counts: 8 left out, more GPUs than the job's 4 sample(s)" in notes


def test_a_default_global_batch_above_the_job_is_the_jobs_samples_and_said() -> None:
    _, notes = _advise("--samples", "100")
    assert "fewer than 256 (resnet50's default batch): the global batch is taken as 100" in notes


def test_steps_with_a_global_batch_are_optimizer_steps_of_it() -> None:
    headline, _ = _advise("--steps", "10", "--global-batch", "4096")
    assert headline.startswith("For 10 steps x 4,096 images (the global batch) of resnet50")
