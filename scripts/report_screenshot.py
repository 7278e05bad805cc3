"""The first screen of an HTML report, as headless Chromium shows it: the pictures in
docs/scout.md. Also fails (exit 1) if any chart's labels are drawn over each other.

    gpuscout scout --model examples/models/cnn.py:build --samples 1200000 --epochs 50 \\
        --deadline 48h --budget 2000 --html /tmp/report.html
    .venv/bin/python scripts/report_screenshot.py /tmp/report.html docs/img/report-first-screen.png

Needs Debian's chromium and chromium-driver (as the report tests do).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.report.browser import chromium, overlapping_labels  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the report")
    parser.add_argument("png", type=Path, help="where to write the first screen")
    parser.add_argument("--width", type=int, default=1200, help="window width in pixels")
    parser.add_argument("--height", type=int, default=900, help="window height in pixels")
    parser.add_argument("--chart", type=Path, help="also the first time vs cost chart, here")
    args = parser.parse_args()
    with chromium(args.width, args.height) as driver:
        driver.get(args.html.resolve().as_uri())
        args.png.write_bytes(driver.get_screenshot_as_png())
        overlaps = overlapping_labels(driver)
        if args.chart is not None:
            from selenium.webdriver.common.by import By

            figure = driver.find_element(By.CSS_SELECTOR, 'figure[data-chart="cost"] svg')
            driver.execute_script("arguments[0].scrollIntoView()", figure)
            args.chart.write_bytes(figure.screenshot_as_png)
    for chart, a, b in overlaps:
        print(f"{chart}: '{a}' overlaps '{b}'", file=sys.stderr)
    return 1 if overlaps else 0


if __name__ == "__main__":
    sys.exit(main())
