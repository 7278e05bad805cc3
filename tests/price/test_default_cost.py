"""``gpuscout cost`` out of the box (issue 17): the default option set includes the RTX 3090,
which no provider in the catalog rents on demand. That used to be fatal ("no on-demand price for
rtx-3090") and hid every other check; now the option is shown without a price, and why."""

from __future__ import annotations

from tests.conftest import run_cli


def test_the_default_command_works() -> None:
    r = run_cli("cost", "--gpu-hours", "1000", block_tf=True)
    assert r.code == 0, r.err
    unpriced = [line for line in r.out.splitlines() if "no price in the catalog" in line]
    assert len(unpriced) == 2 and all("x rtx-3090" in line for line in unpriced), r.out
    assert "no on-demand price for" in r.out  # why (the notes column wraps)
    assert "rtx-4090" in r.out and "h100-sxm" in r.out


def test_json_says_null_with_a_reason() -> None:
    r = run_cli("cost", "--gpu-hours", "1000", "--json", block_tf=True)
    assert r.code == 0, r.err
    options = r.json()["options"]
    unpriced = [o for o in options if o["gpu"] == "rtx-3090"]
    assert [o["count"] for o in unpriced] == [8, 1]  # after every priced option
    assert options[-2:] == unpriced
    for o in unpriced:
        assert o["total_usd"] is None and o["usd_per_hour"] is None
        assert o["effective_usd"] is None
        assert "no on-demand price for rtx-3090" in o["unpriced"]
        assert o["hours"] > 0 and o["energy_kwh"] > 0  # what does not depend on money
    priced = [o for o in options if o["gpu"] != "rtx-3090"]
    assert all(o["unpriced"] is None and o["total_usd"] > 0 for o in priced)
    totals = [o["effective_usd"] for o in priced]
    assert totals == sorted(totals)


def test_other_options_are_checked_before_pricing() -> None:
    """A bad option beside the unpriced one is named, not hidden by the missing price."""
    cases = [
        (("--option", "rtx-3090", "--option", "h100@ibm"), "unknown provider 'ibm'"),
        (("--option", "rtx-3090", "--option", "rtx 4900"), "Did you mean 'rtx-4090'"),
        (("--option", "rtx-3090", "--purchase", "h1oo=30000"), "h1oo"),
        (("--option", "rtx-3090", "--speedup", "4090=x"), "--speedup: the value in '4090=x'"),
        (
            ("--option", "rtx-3090", "--option", "4090x4", "--scaling", "4=1.5"),
            "at most 1, got 1.5",
        ),
    ]
    for args, message in cases:
        r = run_cli("cost", "--gpu-hours", "1000", *args, block_tf=True)
        assert r.code == 2, (args, r.err)
        assert message in r.err and "no on-demand price" not in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_owned_without_a_purchase_price_is_shown_not_fatal() -> None:
    r = run_cli(
        "cost", "--gpu-hours", "100", "--option", "h100@owned", "--option", "h100@lambda",
        "--json", block_tf=True,
    )  # fmt: skip
    assert r.code == 0, r.err
    owned = next(o for o in r.json()["options"] if o["provider"] == "owned")
    assert owned["total_usd"] is None and "no purchase price for h100-sxm" in owned["unpriced"]


def test_nothing_priced_is_one_line_naming_the_option() -> None:
    r = run_cli("cost", "--gpu-hours", "1000", "--option", "rtx-3090", block_tf=True)
    assert r.code == 2
    assert "no on-demand price for rtx-3090" in r.err and "rtx-3090x1=USD_PER_HOUR" in r.err
    assert len(r.err.strip().splitlines()) == 1
