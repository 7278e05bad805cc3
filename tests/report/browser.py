"""A real headless Chromium for the HTML report: open a page, take its first screen, and read
where each chart's text landed, as a reader's browser lays it out.

Used by the report tests and by ``scripts/report_screenshot.py`` (the screenshots in
docs/scout.md). Needs Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")
MISSING = "no headless browser: install Debian's chromium and chromium-driver (.ci/run does)"

# Every text element of every chart, with its box on the page: [chart, index, text, box].
_TEXT_BOXES = """
return Array.from(document.querySelectorAll('figure.chart')).flatMap((f, i) =>
  Array.from(f.querySelectorAll('svg text')).map(t => {
    const b = t.getBoundingClientRect();
    return [f.dataset.chart + ' #' + i, t.textContent, b.left, b.top, b.right, b.bottom];
  }).filter(x => x[1].trim() !== '' && x[4] > x[2] && x[5] > x[3]));
"""


@contextmanager
def chromium(width: int = 1200, height: int = 1600) -> Iterator[Any]:
    """A headless Chromium (a Selenium driver) of the given window size, quit afterwards."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def overlapping_labels(driver: Any, slack: float = 0.5) -> list[tuple[str, str, str]]:
    """Pairs of text in one chart whose boxes overlap by more than ``slack`` pixels each
    way, as (chart, text, text): two labels drawn over each other cannot be read."""
    boxes = driver.execute_script(_TEXT_BOXES)
    found = []
    for i, (chart, text, left, top, right, bottom) in enumerate(boxes):
        for other, text2, left2, top2, right2, bottom2 in boxes[i + 1 :]:
            if other != chart:
                continue
            wide = min(right, right2) - max(left, left2)
            tall = min(bottom, bottom2) - max(top, top2)
            if wide > slack and tall > slack:
                found.append((chart, text, text2))
    return found


def screenshot(html: Path, png: Path, width: int = 1200, height: int = 900) -> None:
    """The first screen of ``html`` as a reader's browser shows it, written to ``png``."""
    with chromium(width, height) as driver:
        driver.get(html.resolve().as_uri())
        png.write_bytes(driver.get_screenshot_as_png())
