"""What a buyer pays (issue 42, item 3): ``advise --owned`` offers cards bought used at their
dated price beside new ones; a new price is a dated street price where the catalog has one,
else the launch MSRP said as such, and none where the card sells used above its MSRP; every
owned option says how much it must train to beat renting, against a rental that exists (the
RTX 3090 included)."""

from __future__ import annotations

from gpuscout.advise import Request, advise
from gpuscout.catalog import load_catalog
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.price import Assumptions
from gpuscout.price.instances import cheapest_rental, not_sold_new, purchase
from tests.conftest import run_cli


def test_owned_advice_lists_used_cards_with_dated_prices_and_their_break_even() -> None:
    catalog = load_catalog()
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    req = Request(profile, 10 * 1_281_167, "images", owned=True, cloud=False, counts=(1,))
    advice = advise(req, session(catalog, runs=[]), Assumptions())
    by = {c.label: c for c in advice.ranked}
    used_3090 = by["1 x rtx-3090 (owned, used)"]
    assert used_3090.upfront_usd == 750 and "seen 2026-05-16" in used_3090.price_note
    assert used_3090.break_even.startswith("break-even ") and "runpod at $0.22/h" in (
        used_3090.break_even
    )
    assert used_3090.break_even in used_3090.reasons
    assert "1 x rtx-4090 (owned, used)" in by and "1 x rtx-4090 (owned)" not in by
    said = [a for a in advice.assumptions if a.startswith("rtx-4090 is not offered new")]
    assert said == [not_sold_new(catalog, catalog.gpus["rtx-4090"])]
    new_5090 = by["1 x rtx-5090 (owned)"]
    assert new_5090.upfront_usd == 3059 and "seen 2026-01-05" in new_5090.price_note
    new_3090 = by["1 x rtx-3090 (owned)"]  # no street price: the MSRP, said as what it is
    assert "launch MSRP $1,499" in new_3090.price_note and "not a dated street price" in (
        new_3090.price_note
    )


def test_a_new_price_below_the_used_market_is_said_and_not_offered() -> None:
    catalog = load_catalog()
    gpu = catalog.gpus["rtx-4090"]
    new = purchase(catalog, gpu, 1)  # asked for (cost --option rtx-4090@owned): said
    used = purchase(catalog, gpu, 1, condition="used")
    assert used is not None and used.usd > (gpu.launch_price_usd or 0)
    assert new is not None and "is below what it sells for used ($2,000)" in new.how
    assert not_sold_new(catalog, catalog.gpus["rtx-3090"]) is None  # $750 used < $1,499


def test_the_rtx_3090_has_a_rental_so_a_used_one_has_a_break_even() -> None:
    catalog = load_catalog()
    rent = cheapest_rental(catalog, catalog.gpus["rtx-3090"], 2)
    assert rent is not None and rent.provider == "runpod" and rent.usd_per_hour == 0.44
    r = run_cli("cost", "--workload", "resnet50", "--epochs", "10", "--option", "rtx-3090x2@used",
                "--json", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    (option,) = r.json()["options"]
    assert option["break_even"]["rent_usd_per_hour"] == 0.44
    assert option["break_even"]["hours_per_month"] > 0
