"""``gpuscout report`` on fixed stored runs: Markdown and JSON against golden files, the HTML's
structure and escaping, and the HTML opened in a real headless Chromium.

Regenerate the golden files after an intended change with GPUSCOUT_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuscout.store import Store
from tests.conftest import run_cli
from tests.report.browser import CHROMIUM, DRIVER, MISSING, chromium, overlapping_labels
from tests.report.runs import HOSTILE, report_runs

GOLDEN = Path(__file__).parents[1] / "data" / "golden"
# The fixture's charts: three rankings (mlp, resnet50, the user model), time vs cost, scaling,
# and the two runs with a monitor timeline.
CHARTS = ["cost", "ranking", "ranking", "ranking", "scaling", "timeline", "timeline"]


def _stored(tmp_path: Path) -> Path:
    db = tmp_path / "report.sqlite"
    with Store(db) as store:
        store.save_many(report_runs())
    return db


def _normalised(text: str) -> str:
    """The parts that change from run to run or release to release, replaced."""
    text = re.sub(r"Generated \S+ by gpuscout \S+", "Generated TIME by gpuscout VERSION", text)
    return re.sub(r'"exported_at": "[^"]+"', '"exported_at": "TIME"', text)


def _check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("GPUSCOUT_UPDATE_GOLDEN"):
        path.write_text(_normalised(text))
    assert _normalised(text) == path.read_text(), f"{name} changed; see the diff above"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One report, both formats, written by the CLI with TensorFlow blocked."""
    tmp = tmp_path_factory.mktemp("report")
    db = _stored(tmp)
    html, md = tmp / "out" / "report.html", tmp / "report.md"
    res = run_cli("report", "--db", str(db), "--html", str(html), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    exported = run_cli("runs", "export", "--db", str(db), block_tf=True)
    assert exported.code == 0, exported.err
    return {
        "html": html.read_text(),
        "md": md.read_text(),
        "json": exported.out,
        "html_path": str(html),
    }


def test_report_files_get_ordinary_permissions(written: dict[str, str]) -> None:
    """Written through a temporary file, but readable as any file this user writes."""
    umask = os.umask(0)
    os.umask(umask)
    assert Path(written["html_path"]).stat().st_mode & 0o777 == 0o666 & ~umask


def test_markdown_matches_golden(written: dict[str, str]) -> None:
    _check_golden("report.md", written["md"])


def test_export_json_matches_golden(written: dict[str, str]) -> None:
    _check_golden("runs.json", written["json"])


def test_inference_runs_get_their_latency_table_not_a_ranking_row(
    written: dict[str, str],
) -> None:
    md = written["md"]
    section = md[md.index("## Inference latency (measured)") : md.index("## Runs")]
    assert "| tf.function \\(best\\) | 1 | 1 | 1000 |" in section  # batch 8 misses 5 ms
    assert "(inference)" not in md.split("## Inference latency")[0]  # not in the rankings
    assert "CPU:0 \\(run 6\\)" not in md


def test_markdown_escapes_every_user_string(written: dict[str, str]) -> None:
    md = written["md"]
    assert HOSTILE not in md and re.search(r"(?<!\\)<", md) is None  # every < escaped
    assert r"\<script\>alert\(1\)\</script\>" in md
    assert r"\| \*\*bold\*\* \[link\]\(http://x\)" in md  # cannot end the cell or link out


class _Html(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_self_contained_escaped_and_complete(written: dict[str, str]) -> None:
    page = _Html()
    page.feed(written["html"])
    tags = [t for t, _ in page.tags]
    assert "script" not in tags and "iframe" not in tags  # the hostile names stayed text
    assert HOSTILE in "".join(page.text)  # ... and show as the characters they are
    for _, attrs in page.tags:  # nothing loads from anywhere: no CDN, no file beside it
        for key in ("src", "href"):
            assert not (attrs.get(key) or "").startswith(("http", "//", "file:"))
    charts = [a.get("data-chart") for t, a in page.tags if t == "figure"]
    assert sorted(charts) == CHARTS
    assert tags.count("svg") == len(charts)
    rows = [a.get("class") for t, a in page.tags if t == "tr" and a.get("class")]
    assert "measured" in rows and "predicted" in rows
    # the checklist's answer and advice #1 side by side, with why they differ; the sources
    ids = [a.get("id") for _, a in page.tags]
    assert "checklist-vs-advice" in ids and "sources" in ids
    # why the checklist's answer and advice #1 differ, or that they agree (data-dependent)
    html = written["html"]
    assert "never prices the job" in html or "first recommended option" in html
    assert "article 000, " in html


def test_report_errors_are_one_line(tmp_path: Path) -> None:
    empty = run_cli("report", "--html", str(tmp_path / "r.html"), block_tf=True)
    assert empty.code == 2 and "no results database at" in empty.err  # not created either
    db = _stored(tmp_path)
    nowhere = run_cli("report", "--db", str(db), block_tf=True)
    assert nowhere.code == 2 and "--html FILE and/or --md FILE" in nowhere.err
    folder = run_cli("report", "--db", str(db), "--html", str(tmp_path), block_tf=True)
    assert folder.code == 2 and "is a folder" in folder.err
    missing = run_cli("report", "--db", str(db), "--runs", "9", "--md", "x.md", block_tf=True)
    assert missing.code == 2 and "no run with id 9" in missing.err
    for res in (empty, nowhere, folder, missing):
        assert len(res.err.strip().splitlines()) == 1 and "Traceback" not in res.err


@pytest.mark.skipif(CHROMIUM is None or DRIVER is None, reason=MISSING)
def test_html_opens_in_chromium_and_draws_every_chart(written: dict[str, str]) -> None:
    from io import BytesIO

    from PIL import Image

    with chromium(1200, 1600) as driver:
        driver.get(Path(written["html_path"]).as_uri())
        counts = driver.execute_script(
            "return Array.from(document.querySelectorAll('figure.chart')).map(f => ["
            "f.dataset.chart, f.querySelectorAll('svg').length,"
            "f.querySelectorAll('path, rect, use').length,"
            "f.querySelector('svg').getBoundingClientRect().height]);"
        )
        scripts = driver.execute_script("return document.scripts.length;")
        text = driver.execute_script("return document.body.innerText;")
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        overlaps = overlapping_labels(driver)
        png = driver.get_screenshot_as_png()
    assert errors == []
    assert scripts == 0
    assert HOSTILE in text
    title, first = [line for line in text.splitlines() if line.strip()][:2]  # the answer first
    assert first.startswith("For 90 epochs x 1,281,167 images of resnet50: rent "), title
    assert sorted(c[0] for c in counts) == CHARTS
    for kind, svgs, marks, height in counts:
        assert svgs == 1 and height > 100, kind
        # bare axes draw about a dozen (the frame, four spines, the ticks); one bar and its
        # range bring the one-run ranking to 18
        assert marks > 15, f"the {kind} chart has only {marks} drawn elements"
    assert overlaps == []  # no two labels of a chart drawn over each other
    colours = Image.open(BytesIO(png)).convert("RGB").getcolors(maxcolors=1 << 16)
    assert colours is None or len(colours) > 50  # not a blank page


def test_too_few_requests_and_a_missing_batch_are_said_not_shown_as_values(
    tmp_path: Path,
) -> None:
    """An inference run of 100 requests a point cannot show p99.9, nor whether p99 meets the
    target; a ScoutCallback run told no batch size has none. The report says so in words."""
    from gpuscout.core.records import BenchConfig
    from gpuscout.measure.fit_run import compose_fit_run
    from gpuscout.measure.latency import inference_result

    config = BenchConfig(mode="inference", batch_sizes=[1], slo_ms=5.0)
    few = [0.001 + 0.00001 * i for i in range(100)]
    served = [("tf.function", 1, 1, few, 0.2)]
    short = inference_result(config, "CPU:0", "mlp", served, [], {"hostname": "box"})
    steps_only = compose_fit_run(
        [0.01] * 40, model_name="mine", device="CPU:0", device_name="a CPU", policy="float32",
        xla=False, batch_size=None, env={"hostname": "box"},
    )  # fmt: skip
    db = tmp_path / "few.sqlite"
    with Store(db) as store:
        store.save_many([short, steps_only])
    md = tmp_path / "few.md"
    res = run_cli("report", "--db", str(db), "--md", str(md), block_tf=True)
    assert res.code == 0, res.err
    text = md.read_text()
    (row,) = [line for line in text.splitlines() if line.startswith("| tf.function")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[7] == cells[9] == r"not shown \(too few requests\)", row  # p99.9, meets target
    assert "batch not given" in text
