"""Rentals priced per instance size as providers sell them, purchases from the catalog's
prices (issues 30 and 42).

Issue 30: 8 x RTX 4090 on RunPod was priced at the 1-GPU community price though the catalog
listed only its 8-GPU instance beside it. Issue 42: 2 rented GPUs were then priced as that
whole 8-GPU box ($5.52/h for a job two single rentals do for $0.68/h), and 8 H100 rented
singly were timed as one NVLink box. Now every way a provider sells n GPUs is kept (one
n-GPU instance, a RunPod pod of any count, several smaller instances on as many machines
over a network, the smallest bigger instance paid whole), each timed as it is laid out, and
the cheapest for the job is the one priced and compared.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuscout.catalog import Catalog, load_catalog
from gpuscout.predict.profile import cached
from gpuscout.predict.session import session
from gpuscout.price import Assumptions, cost_all
from gpuscout.price.instances import (
    ASSUMED_RATE,
    cheapest_rental,
    purchase,
    separate_instances_gbit,
)
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


def test_runpod_pods_take_a_gpu_count_at_the_per_gpu_rate(cat: Catalog) -> None:
    """RunPod sells a pod with a GPU count (runpodctl --gpuCount, the row's notes): 2 RTX
    4090 are one 2-GPU pod at 2 x $0.34, not its 8-GPU secure instance paid whole."""
    gpu = cat.gpus["rtx-4090"]
    one, two, eight = (cheapest_rental(cat, gpu, n, "runpod") for n in (1, 2, 8))
    assert one is not None and one.usd_per_hour == pytest.approx(0.34)
    assert two is not None and two.usd_per_hour == pytest.approx(0.68)
    assert two.gpus_paid == 2 and two.layout == (1, 2) and "any 1-8 GPUs" in two.how
    assert eight is not None and eight.usd_per_hour == pytest.approx(8 * 0.34)
    # sixteen: more than a pod holds, so two pods on two hosts, over a network
    sixteen = cheapest_rental(cat, gpu, 16, "runpod")
    assert sixteen is not None and sixteen.layout == (2, 8)
    assert sixteen.network_gbit == separate_instances_gbit() and "2 machines" in sixteen.how


def test_one_gpu_instances_rent_as_separate_machines_timed_over_a_network(cat: Catalog) -> None:
    """Lambda lists the A100 40 GB only as a 1-GPU instance: two are two machines talking over
    the separate-instances network (sourced in cost_defaults.csv), and the prediction times
    them so; 8 H100 at Nebius (1-GPU rows) are 8 machines, not one NVLink box."""
    a100 = cat.gpus["a100-40gb-sxm"]
    two = cheapest_rental(cat, a100, 2, "lambda")
    assert two is not None and two.layout == (2, 1) and two.usd_per_hour == pytest.approx(3.98)
    assert "not NVLink or PCIe" in two.how and f"{separate_instances_gbit():g} Gb/s" in two.how
    h100 = cat.gpus["h100-sxm"]
    nebius = cheapest_rental(cat, h100, 8, "nebius")
    assert nebius is not None and nebius.layout == (8, 1)
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    model = session(cat, None)
    box = model.option(profile, h100, 8)  # one HGX machine, NVLink
    apart = model.option(profile, h100, 8, layout=nebius.layout,
                         network_gbit=nebius.network_gbit)  # fmt: skip
    assert "network" in apart.link and "NVLink" in box.link
    assert apart.scaling_efficiency < box.scaling_efficiency - 0.2


def test_the_cheapest_way_is_the_cheapest_for_the_job(tmp_path: Path) -> None:
    """Per hour, 8 one-GPU instances at acme ($8.00) undercut beta's 8-GPU box ($8.80); for a
    job that scales over the box's links and not over the separate instances' network, the
    box does the work for less, and cheapest_rental takes the job's scaling into it."""
    rows = ["rtx-5080,acme,on_demand,1x5080,1,,1.00,,2026-12-01",
            "rtx-5080,beta,on_demand,8x5080,8,,1.10,,2026-12-01"]  # fmt: skip
    cat = _with_prices(tmp_path, rows)  # the shipped catalog rents no RTX 5080
    gpu = cat.gpus["rtx-5080"]
    per_hour = cheapest_rental(cat, gpu, 8)
    assert per_hour is not None and (per_hour.provider, per_hour.layout) == ("acme", (8, 1))
    scaling = {(8, 1): 0.3, (1, 8): 0.9}
    for_job = cheapest_rental(cat, gpu, 8, scaling=lambda r: scaling[r.layout])
    assert for_job is not None and (for_job.provider, for_job.layout) == ("beta", (1, 8))
    # a job that scales as well apart as together takes the cheaper hour
    even = cheapest_rental(cat, gpu, 8, scaling=lambda r: 0.9)
    assert even is not None and even.provider == "acme"


def test_an_eight_gpu_only_provider_charges_the_instance_for_one_gpu(cat: Catalog) -> None:
    """AWS sells A100 40 GB only as p4d.24xlarge (8 GPUs): one GPU there costs the whole
    instance, and the cheapest rental of one is Lambda's 1-GPU instance."""
    gpu = cat.gpus["a100-40gb-sxm"]
    aws = cheapest_rental(cat, gpu, 1, "aws")
    assert aws is not None and aws.usd_per_hour == pytest.approx(8 * 2.745)
    assert aws.how.startswith("no 1-GPU instance; the smallest bigger one, 8-GPU instance")
    best = cheapest_rental(cat, gpu, 1)
    assert best is not None and (best.provider, best.usd_per_hour) == ("lambda", 1.99)


def test_the_rule_is_read_from_the_prices_data(tmp_path: Path) -> None:
    """A provider with only 4-GPU instances: 2 GPUs pay for 4, 4 are one instance, 8 are two
    instances (two machines, over a network); 3 cannot be made of them without a bigger one,
    so 3 pay for 4; 6 neither divides nor fits: assumed at the per-GPU rate, and said."""
    cat = _with_prices(tmp_path, ["rtx-5090,acme,on_demand,4x5090,4,,1.50,,2026-12-01"])
    gpu = cat.gpus["rtx-5090"]
    two, four, eight, six = (cheapest_rental(cat, gpu, n, "acme") for n in (2, 4, 8, 6))
    assert two is not None and two.usd_per_hour == pytest.approx(6.0) and two.gpus_paid == 4
    assert four is not None and four.usd_per_hour == pytest.approx(6.0) and not four.assumed
    assert eight is not None and eight.usd_per_hour == pytest.approx(12.0)
    assert eight.layout == (2, 4) and not eight.assumed
    assert six is not None and six.assumed and ASSUMED_RATE in six.how


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
    specs = [parse_option(t) for t in ("4090x8@runpod", "4090x8", "4090x8@used", "b200x8")]
    options = build_options(specs, model, ref, {}, {}, {})
    runpod, cheapest, _owned, b200 = options
    assert runpod.usd_per_hour == pytest.approx(8 * 0.34)  # one pod of 8 at the 1-8 rate
    assert cheapest.usd_per_hour == pytest.approx(8 * 0.34) and cheapest.provider == "runpod"
    assert any("one 8-GPU instance" in n for n in cheapest.notes)
    assert b200.provider == "runpod" and any("any 1-8 GPUs" in n for n in b200.notes)
    lines, _ = cost_all(options, 100.0, Assumptions())
    by = {(line.gpu, line.provider): line for line in lines}
    up = by[("rtx-4090", "owned")]
    assert up.upfront_usd is not None and up.upfront_usd > up.total_usd  # a share of it
    used = purchase(cat, cat.gpus["rtx-4090"], 8, condition="used")  # no new price: see below
    assert used is not None and up.upfront_usd == pytest.approx(used.usd)
    assert by[("rtx-4090", "runpod")].upfront_usd is None
    assert by[("rtx-4090", "runpod")].to_json_dict()["upfront_usd"] is None
