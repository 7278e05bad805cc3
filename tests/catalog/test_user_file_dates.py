"""A user's price dated in the future is refused past one day of clock skew (issue 31); the
day of skew itself is allowed, so a file written in a time zone ahead still loads."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from gpuscout.catalog.files import check_dates
from gpuscout.catalog.models import Price
from gpuscout.core.errors import UserError

TODAY = dt.date(2026, 12, 6)


def _price(observed_on: str, retrieved_on: str) -> Price:
    return Price.model_validate({
        "gpu_id": "rtx-4090", "provider": "acme", "kind": "on_demand",
        "usd_per_gpu_hour": "0.3", "observed_on": observed_on, "source": "me",
        "retrieved_on": retrieved_on,
    })  # fmt: skip


@pytest.mark.parametrize("observed", ["2026-12-07", "2026-12", "2026-11-30"])
def test_today_tomorrow_and_this_month_load(observed: str) -> None:
    check_dates(_price(observed, "2026-12-07"), Path("p.csv"), 2, today=TODAY)


@pytest.mark.parametrize(
    ("observed", "retrieved", "says"),
    [
        ("2026-12-08", "2026-12-01", "column 'observed_on': 2026-12-08 is in the future"),
        ("2027-01", "2026-12-01", "column 'observed_on': 2027-01 is in the future"),
        ("2026-12-01", "2026-12-08", "column 'retrieved_on': 2026-12-08 is in the future"),
    ],
)
def test_two_days_ahead_is_refused_naming_file_line_and_date(
    observed: str, retrieved: str, says: str
) -> None:
    with pytest.raises(UserError) as err:
        check_dates(_price(observed, retrieved), Path("p.csv"), 7, today=TODAY)
    assert f"p.csv: line 7, {says} (today is 2026-12-06)" in str(err.value)


@pytest.mark.parametrize(
    ("observed", "age", "says"),
    [
        ("2026-12-07", 0, "2026-12-07 (today)"),  # seen today in UTC, read west of UTC
        ("2026-12-06", 0, "2026-12-06 (today)"),
        ("2026-12-05", 1, "2026-12-05 (1 day ago)"),
        ("2026-11", 35, "2026-11 (35 days ago)"),
        ("2021-12-06", 1826, "2021-12-06 (1,826 days ago)"),
    ],
)
def test_a_price_seen_today_west_of_utc_is_not_minus_one_day_old(
    observed: str, age: int, says: str
) -> None:
    price = _price(observed, "2026-12-06")
    assert price.age_days(TODAY) == age
    assert price.observed_text(TODAY) == says
