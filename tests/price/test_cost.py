"""Cost arithmetic on hand-computed cases, and bad input."""

from __future__ import annotations

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.core.errors import UserError
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.price import Assumptions, Option, cost_options
from gpuscout.price.cost import HOURS_PER_MONTH, cost_line
from gpuscout.price.options import build_options, parse_option, parse_pairs
from gpuscout.price.startup import startup_hours

NO_FAIL = Assumptions(failures=False)


def _cloud(count: int = 4, scaling: float = 0.5, usd: float = 2.0, **kw: object) -> Option:
    return Option("rtx-3090", count, 2.0, scaling, 350.0, True, "cloud", usd_per_hour=usd, **kw)  # type: ignore[arg-type]


def test_cloud_time_money_energy() -> None:
    line = cost_line(_cloud(), 1000, NO_FAIL)
    up = startup_hours()  # a rented machine's start-up, waited for and billed (issue 42)
    assert line.startup_hours == up and up == pytest.approx((300 + 240) / 3600)
    assert line.hours == pytest.approx(1000 / (2.0 * 4 * 0.5) + up)  # 250 h + start-up
    assert line.gpu_hours == pytest.approx(1000)  # the work: no start-up in it
    assert line.total_usd == pytest.approx(500 + up * 2.0)
    assert line.energy_kwh == pytest.approx(4 * 350 * 0.8 * 250 / 1000)  # 280 kWh
    assert line.energy_usd == 0  # the cloud price includes it
    assert line.effective_usd == line.total_usd


def test_failures_and_delay() -> None:
    a = Assumptions(
        failures_per_1000_gpu_hours_consumer=2.0,
        checkpoint_hours=2.0,
        restart_minutes=30,
        delay_usd_per_day=240,
    )
    line = cost_line(_cloud(), 1000, a)  # 250 h wall, 1000 GPU-hours
    assert line.expected_failures == pytest.approx(2.0)
    assert line.rework_hours == pytest.approx(2.0 * (1.0 + 0.5))  # 3 h
    assert line.rework_usd == pytest.approx(3 * 2.0)
    up = startup_hours()
    assert line.delay_usd == pytest.approx((250 + up + 3) / 24 * 240)
    assert line.effective_usd == pytest.approx(500 + up * 2 + 6 + ((253 + up) / 24) * 240)


def test_owned_amortization_energy_and_break_even() -> None:
    a = Assumptions(failures=False, amortize_years=2, owned_utilization=0.5, usd_per_kwh=0.2)
    owned = Option(
        "rtx-4090", 2, 1.0, 1.0, 450.0, True, "owned", purchase_usd=3200.0, rent_usd_per_hour=1.4
    )
    line = cost_line(owned, 100, a)
    use_hours = 2 * 12 * HOURS_PER_MONTH * 0.5
    energy_rate = 2 * 450 * 0.8 / 1000 * 0.2  # $/h
    assert line.hours == pytest.approx(50)
    assert line.usd_per_hour == pytest.approx(3200 / use_hours + energy_rate)
    assert line.energy_usd == pytest.approx(50 * energy_rate)
    assert line.break_even_months == pytest.approx(3200 / ((1.4 - energy_rate) * 365))


def test_cheapest_first() -> None:
    lines = cost_options([_cloud(usd=9.0), _cloud(usd=1.0)], 100, NO_FAIL)
    assert [line.usd_per_hour for line in lines] == [1.0, 9.0]


@pytest.mark.parametrize(
    ("option", "hours", "message"),
    [
        (_cloud(scaling=1.2), 100, "scaling efficiency must be in"),
        (_cloud(), -5, "must be positive"),
        (_cloud(count=0), 100, "GPU count must be >= 1"),
    ],
)
def test_bad_numbers(option: Option, hours: float, message: str) -> None:
    with pytest.raises(UserError, match=message):
        cost_line(option, hours, NO_FAIL)


def test_option_specs_and_catalog_prices() -> None:
    cat = load_catalog()
    spec = parse_option("A100-80GBx8@runpod")
    assert (spec.gpu, spec.count, spec.provider, spec.usd_per_hour) == (
        "a100-80gb",
        8,
        "runpod",
        None,
    )
    model = session(cat, runs=[])
    (opt,) = build_options([spec], model, cat.gpus["rtx-3090"], {}, {}, {})
    assert opt.usd_per_hour == pytest.approx(8 * 1.39)  # cheapest RunPod price in the catalog
    # no workload: the fitted scaling model on the articles' benchmark step, said in the notes
    expected = model.option(
        cached("resnet50", {}, 256, "mixed_float16"), cat.gpus["a100-80gb-sxm"], 8
    )
    assert opt.scaling == expected.scaling_efficiency and opt.scaling_fitted
    assert any("fitted scaling model" in n for n in opt.notes)
    with pytest.raises(UserError, match="unknown provider 'ibm'"):
        build_options([parse_option("h100@ibm")], model, cat.gpus["rtx-3090"], {}, {}, {})
    # Issue 17: an option without a price is shown as such, not refused; only a set of
    # options none of which has a price is an error (see tests/price/test_default_cost.py).
    (owned,) = build_options([parse_option("h100@owned")], model, cat.gpus["rtx-3090"], {}, {}, {})
    assert owned.unpriced and "no purchase price for h100-sxm" in owned.unpriced
    with pytest.raises(UserError, match="is not GPU"):
        parse_option("@@")
    with pytest.raises(UserError, match="--scaling '4=abc'"):
        parse_pairs(["4=abc"], "--scaling", "EFFICIENCY")
