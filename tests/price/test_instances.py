"""Rentals priced per instance size, purchases from the catalog's prices (issue 30).

8 x RTX 4090 on RunPod was priced at the 1-GPU community price ($0.34/GPU-h) though the
catalog lists RunPod's 8-GPU instance at $0.69: n GPUs are now priced from an n-GPU instance,
else the smallest bigger one (all of it paid for), else n x the 1-GPU price, said to be an
assumption.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.price import Assumptions, cost_all
from gpuscout.price.instances import SINGLY, cheapest_rental, purchase, rental
from gpuscout.price.options import build_options, parse_option

HEADER = (
    "gpu_id,provider,kind,instance_type,gpus_per_instance,region,usd_per_gpu_hour,"
    "usd_per_gpu,observed_on,notes,source,retrieved_on\n"
)


@pytest.fixture(scope="module")
def cat() -> Catalog:
    return load_catalog()


def _with_prices(tmp_path: Path, rows: list[str]) -> Catalog:
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + "".join(f"{r},,test rows,2026-12-02\n" for r in rows))
    return load_catalog([str(path)])


def test_eight_rtx_4090_on_runpod_are_its_eight_gpu_instance(cat: Catalog) -> None:
    gpu = cat.gpus["rtx-4090"]
    one = rental(cat, gpu, "runpod", 1)
    eight = rental(cat, gpu, "runpod", 8)
    assert one is not None and eight is not None
    assert one.usd_per_hour == pytest.approx(0.34)  # the 1-GPU community price
    assert eight.usd_per_hour == pytest.approx(8 * 0.69) and eight.gpus_paid == 8
    assert eight.usd_per_gpu_hour == pytest.approx(0.69)
    assert "8-GPU instance 8x_RTX4090_SECURE" in eight.how and not eight.assumed
    # two GPUs: RunPod lists no 2-GPU RTX 4090 instance, so its 8-GPU one is paid for whole
    two = rental(cat, gpu, "runpod", 2)
    assert two is not None and two.gpus_paid == 8 and two.usd_per_hour == pytest.approx(5.52)
    assert "all 8 paid for" in two.how
    # sixteen: two machines of eight, as the prediction runs them
    sixteen = rental(cat, gpu, "runpod", 16)
    assert sixteen is not None and sixteen.usd_per_hour == pytest.approx(2 * 5.52)
    assert sixteen.how.startswith("2 machines, each 8-GPU instance")


def test_only_single_gpu_rows_are_n_times_the_1_gpu_price_said_assumed(cat: Catalog) -> None:
    found = rental(cat, cat.gpus["b200"], "runpod", 8)
    assert found is not None and found.assumed
    assert found.usd_per_hour == pytest.approx(8 * 5.98)
    assert f"8 x the 1-GPU price $5.98/GPU-h ({SINGLY})" == found.how
    assert rental(cat, cat.gpus["b200"], "aws", 8) is None  # no such price


def test_an_eight_gpu_only_provider_charges_the_instance_for_one_gpu(cat: Catalog) -> None:
    """AWS sells A100 40 GB only as p4d.24xlarge (8 GPUs): one GPU there costs the whole
    instance, and the cheapest rental of one is Lambda's 1-GPU instance."""
    gpu = cat.gpus["a100-40gb-sxm"]
    aws = rental(cat, gpu, "aws", 1)
    assert aws is not None and aws.usd_per_hour == pytest.approx(8 * 2.745)
    assert aws.how.startswith("no 1-GPU instance; the smallest bigger one, 8-GPU instance")
    best = cheapest_rental(cat, gpu, 1)
    assert best is not None and (best.provider, best.usd_per_hour) == ("lambda", 1.99)


def test_the_rule_is_read_from_the_prices_data(tmp_path: Path) -> None:
    """A provider with only 4-GPU instances: 2 GPUs pay for 4, 4 are one instance, 8 are
    (one machine of 8 PCIe cards) 8 x its per-GPU price, said to be assumed."""
    cat = _with_prices(tmp_path, ["rtx-5090,acme,on_demand,4x5090,4,,1.50,,2026-12-01"])
    gpu = cat.gpus["rtx-5090"]
    two, four, eight = (rental(cat, gpu, "acme", n) for n in (2, 4, 8))
    assert two is not None and two.usd_per_hour == pytest.approx(6.0) and two.gpus_paid == 4
    assert four is not None and four.usd_per_hour == pytest.approx(6.0) and not four.assumed
    assert eight is not None and eight.usd_per_hour == pytest.approx(12.0) and eight.assumed
    assert "assumed: a 8-GPU machine rents at that rate" in eight.how


def test_purchase_uses_the_catalogs_prices_else_the_launch_msrp(tmp_path: Path) -> None:
    cat = load_catalog()
    msrp = cat.gpus["rtx-5080"].launch_price_usd
    assert msrp is not None
    bought = purchase(cat, cat.gpus["rtx-5080"], 8)
    assert bought is not None and bought.usd == pytest.approx(8 * msrp)
    assert "launch MSRP" in bought.describe() and "no host share" in bought.describe()
    assert purchase(cat, cat.gpus["rtx-5080"], 2, given=700.0).usd == 1400.0  # type: ignore[union-attr]
    rows = ["rtx-5080,ebay,purchase_used,,1,,,650,2026-11-30",
            "rtx-5080,ebay,purchase_used,old,1,,,600,2026-01-30"]  # fmt: skip
    mine = _with_prices(tmp_path, rows)
    assert purchase(mine, mine.gpus["rtx-5080"], 2).usd == 2 * msrp  # type: ignore[union-attr]
    used = purchase(mine, mine.gpus["rtx-5080"], 2, condition="used")  # the newest row
    assert used is not None and used.usd == pytest.approx(1300.0) and used.condition == "used"
    assert "used (ebay, seen 2026-11-30" in used.how
    assert purchase(cat, cat.gpus["rtx-5080"], 1, condition="used") is None  # none shipped


def test_cost_prices_options_per_instance_and_shows_the_up_front() -> None:
    cat = load_catalog()
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    model = session(cat, None)
    ref = cat.gpus["rtx-3090"]
    specs = [parse_option(t) for t in ("4090x8@runpod", "4090x8", "4090x8@owned", "b200x8")]
    options = build_options(specs, model, ref, {}, {}, {})
    runpod, cheapest, _owned, b200 = options
    assert runpod.usd_per_hour == pytest.approx(8 * 0.69)
    assert cheapest.usd_per_hour == pytest.approx(8 * 0.69) and cheapest.provider == "runpod"
    assert any("8-GPU instance" in n for n in cheapest.notes)
    assert any(SINGLY in n for n in b200.notes)
    lines, _ = cost_all(options, 100.0, Assumptions())
    by = {(line.gpu, line.provider): line for line in lines}
    up = by[("rtx-4090", "owned")]
    assert up.upfront_usd is not None and up.upfront_usd > up.total_usd  # a share of it
    assert up.upfront_usd == pytest.approx(8 * (cat.gpus["rtx-4090"].launch_price_usd or 0))
    assert by[("rtx-4090", "runpod")].upfront_usd is None
    assert by[("rtx-4090", "runpod")].to_json_dict()["upfront_usd"] is None
