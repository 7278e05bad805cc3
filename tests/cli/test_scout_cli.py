"""``gpuscout scout``, the main job, end to end on a tiny budget: a real measurement, stored,
predicted, priced, advised and written as HTML and Markdown."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import assert_user_errors, run_cli


def test_scout_measures_reports_and_summarises(tmp_path: Path) -> None:
    html, md = tmp_path / "out" / "report.html", tmp_path / "report.md"
    res = run_cli("scout", "--measure", "mlp=2", "--html", str(html), "--md", str(md), "-q",
                  "--note", "ci <scout>")  # fmt: skip
    assert res.code == 0, res.err
    for text in ("measured here", "predicted, fastest 5", "checklist (the articles' rule)",
                 "advice #1 (predicted)", f"report: {html}"):  # fmt: skip
        assert text in res.out
    listed = run_cli("runs", "list", "--json", block_tf=True).json()
    assert [r["workload"] for r in listed] == ["mlp"] and listed[0]["status"] == "ok"
    page = html.read_text()
    assert page.count('<figure class="chart"') >= 3 and "ci &lt;scout&gt;" in page
    text = md.read_text()
    assert "## Advice" in text
    # The default job is epochs a user recognises, said as an assumption, not GPU-hours.
    assert "job: 20 epochs of mlp (1.20 M samples)" in res.out
    assert "assumption (default job for mlp: 20 epochs" in res.out
    # The checklist and advice #1 are set side by side with the reason they differ.
    assert "why they differ: " in res.out or "agree" in res.out
    assert "never prices the job" in text or "agree" in text
    assert "## Sources" in text and "article 001, '性能对比测试" in text


def test_scout_bad_input_is_one_line() -> None:
    assert_user_errors(
        [
            (("scout", "--measure", "nosuch=5"), "unknown workload 'nosuch'"),
            (("scout", "--measure", "mlp=0"), "'mlp=0' in --measure is not WORKLOAD=SECONDS"),
            (("scout", "--answers", "yes,no"), "--answers needs 4 answers"),
        ]
    )
