"""``gpuscout cost`` out of the box (issue 17): an option no provider in the catalog rents on
demand (the RTX 3090 once, which the default option set includes; the RTX 5080 since the
catalog rents 3090s, issue 42) used to be fatal ("no on-demand price for ...") and hid every
other check; now it is shown without a price, and why."""

from __future__ import annotations

from tests.conftest import run_cli


def test_the_default_command_works() -> None:
    """Every default option is priced now: the RTX 3090, the articles' reference, too."""
    r = run_cli("cost", "--gpu-hours", "1000", block_tf=True)
    assert r.code == 0, r.err
    assert "no price in the catalog" not in r.out
    assert "rtx-3090 (runpod)" in r.out and "rtx-4090" in r.out and "h100-sxm" in r.out


def test_json_says_null_with_a_reason() -> None:
    r = run_cli("cost", "--gpu-hours", "1000", "--option", "rtx-5080", "--option", "rtx-5080x8",
                "--option", "h100", "--option", "rtx-4090", "--json", block_tf=True)  # fmt: skip
    assert r.code == 0, r.err
    options = r.json()["options"]
    unpriced = [o for o in options if o["gpu"] == "rtx-5080"]
    assert [o["count"] for o in unpriced] == [8, 1]  # after every priced option
    assert options[-2:] == unpriced
    for o in unpriced:
        assert o["total_usd"] is None and o["usd_per_hour"] is None
        assert o["effective_usd"] is None
        assert "no on-demand price for rtx-5080" in o["unpriced"]
        assert o["hours"] > 0 and o["energy_kwh"] > 0  # what does not depend on money
    priced = [o for o in options if o["gpu"] != "rtx-5080"]
    assert len(priced) == 2
    assert all(o["unpriced"] is None and o["total_usd"] > 0 for o in priced)
    totals = [o["effective_usd"] for o in priced]
    assert totals == sorted(totals)


def test_other_options_are_checked_before_pricing() -> None:
    """A bad option beside the unpriced one is named, not hidden by the missing price."""
    cases = [
        (("--option", "rtx-5080", "--option", "h100@ibm"), "unknown provider 'ibm'"),
        (("--option", "rtx-5080", "--option", "rtx 4900"), "Did you mean 'rtx-4090'"),
        (("--option", "rtx-5080", "--purchase", "h1oo=30000"), "h1oo"),
        (("--option", "rtx-5080", "--speedup", "4090=x"), "--speedup: the value in '4090=x'"),
        (
            ("--option", "rtx-5080", "--option", "4090x4", "--scaling", "4=1.5"),
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
    r = run_cli("cost", "--gpu-hours", "1000", "--option", "rtx-5080", block_tf=True)
    assert r.code == 2
    assert "no on-demand price for rtx-5080" in r.err and "rtx-5080x1=USD_PER_HOUR" in r.err
    assert len(r.err.strip().splitlines()) == 1
