"""The ranges predictions print, recomputed from the shipped data (issue 29): each is the
held-out split that matches the user's situation, and covers what it claims on that split.
No TensorFlow: the shipped profiles and published rows."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpuscout.catalog import load_catalog
from gpuscout.predict import uncertainty
from gpuscout.predict.bands import LEVELS, TARGET, coverage
from gpuscout.predict.calibration_points import published_points
from gpuscout.predict.out_of_sample import (
    FROZEN_CHIPS,
    FROZEN_SOURCES,
    Figures,
    development,
    family,
    frozen,
    leave_one_chip_out,
    leave_one_source_out,
    mape,
    shipped,
)
from gpuscout.predict.uncertainty import VALIDATED

# The external test sources issue 29 reserves: none may enter any fit, prior or design choice.
# The project's external test (issue 41): never in a fit, a prior or a design choice. MLPerf
# Training results are usable except rounds v3.0 and v3.1 (checked apart, below).
RESERVED = ("neusight", "server-gear", "servergear", "vectorlm", "vectorinstitute", "mvsjober",
            "ml-benchmarks", "csc.fi")  # fmt: skip
MLPERF_RESERVED_ROUNDS = ("v3.0", "v3.1", "3.0", "3.1")


def reserved(text: str) -> bool:
    """Whether a published row's source (id and text, lower case) is a reserved one."""
    mlperf = ("mlperf" in text or "mlcommons" in text) and any(
        r in text for r in MLPERF_RESERVED_ROUNDS
    )
    tf_bert = (
        "deeplearningexamples" in text.replace(" ", "")
        and "tensorflow" in text
        and ("bert" in text)
    )
    return mlperf or tf_bert or any(name in text for name in RESERVED)


def reserved_in_data(text: str) -> bool:
    """:func:`reserved` for any line of a shipped data file. NeuSight is reserved for its
    end-to-end labels only: its MIT kernel latencies are the kernel model's data, and the
    files that cite them name it."""
    neusight_e2e = "neusight" in text and any(w in text for w in ("e2e", "end-to-end", "end_to"))
    return neusight_e2e or reserved(text.replace("neusight", ""))


def test_no_shipped_data_file_names_a_reserved_source() -> None:
    """Issue 41: the external test's sources are kept by the project, not shipped. Every line
    of every data file in the package (published rows, stored figures, fitted models) is
    checked, not only the rows a fit reads: a stored summary of a reserved source's error is a
    design input too."""
    package = Path(load_catalog.__code__.co_filename).parents[1]
    files = [f for f in package.rglob("data/**/*") if f.is_file() and f.suffix != ".pyc"]
    assert len(files) >= 20 and any(f.name == "published_finetuning.csv" for f in files)
    found = [
        f"{f.relative_to(package)}:{i}"
        for f in files
        for i, line in enumerate(f.read_text(errors="replace").lower().splitlines(), 1)
        if reserved_in_data(line)
    ]
    assert found == []
    assert reserved_in_data("vectorinstitute/vectorlm@d397488 docs/reference_throughput.md")
    assert reserved_in_data("neusight end-to-end labels, gpt2 on an h100")
    assert not reserved_in_data("neusight (github.com/sitar-lab/neusight) kernel latencies")


@pytest.fixture(scope="module")
def points():  # type: ignore[no-untyped-def]
    return published_points(load_catalog())


@pytest.fixture(scope="module")
def figures(points) -> Figures:  # type: ignore[no-untyped-def]
    return Figures.of(points)


@pytest.fixture(scope="module")
def by_source(points):  # type: ignore[no-untyped-def]
    return leave_one_source_out(development(points))


@pytest.fixture(scope="module")
def by_chip(points):  # type: ignore[no-untyped-def]
    return leave_one_chip_out(development(points))


# One unit of the last digit shown (x1.50: 0.01), relative.
SHOWN = 0.01 / 1.5


def test_the_shipped_figures_are_those_of_the_shipped_data(
    figures, points, by_source, by_chip
) -> None:  # type: ignore[no-untyped-def]
    """out_of_sample.json (every range and tie threshold comes from it) is what the shipped
    rows give today: ``benchmarks/prediction_accuracy.py --write`` renews it.

    Compared at the precision a user reads them, give or take one unit of the last digit
    (bands as x1.50, relative error as 8.8 %): the fits' optimum moves in the third decimal
    from one CPU model or NumPy/SciPy build to another (x1.4996 on one 2-core AMD EPYC,
    x1.5028 on another), which no output shows. The bands are recomputed at the shipped
    levels. The level a band is chosen at is discrete: a held-out outcome within a rounding
    error of an edge (0.1 % for the sources' ResNet-50 rows at 88 % and 90 %) can move it a
    step on another CPU, so today's choice may differ from the shipped one only by such a
    near tie: one outcome of the nested coverage."""
    got = shipped()
    at_shipped = Figures.of(points, levels=got.levels)
    assert set(got.levels) == set(figures.levels) == set(at_shipped.nested)
    for key, level in got.levels.items():
        n = _outcomes(key, by_source, by_chip)  # coverages are stored to 4 decimals: counted

        def count(nested: float, n: int = n) -> int:
            return round(nested * n)

        assert abs(count(at_shipped.nested[key]) - count(got.nested[key])) <= 1, key
        today = figures.levels[key]
        steps = abs(LEVELS.index(int(today)) - LEVELS.index(int(level)))
        # the tie is at the narrower of the two levels: one outcome from the target there
        narrower = at_shipped.nested[key] if level < today else figures.nested[key]
        near_tie = abs(count(narrower) - TARGET * n) <= 1
        assert steps == 0 or (steps == 1 and near_tie), (key, level, today)
    for name in ("source_absolute", "chip_relative"):
        bands = getattr(got, name)
        assert set(bands) == set(getattr(at_shipped, name)) == {"resnet50", "bert"}, name
        for fam, band in bands.items():
            assert band == pytest.approx(getattr(at_shipped, name)[fam], rel=SHOWN), (name, fam)
    assert got.unvalidated == pytest.approx(at_shipped.unvalidated, rel=SHOWN)
    assert got.relative_error == pytest.approx(figures.relative_error, abs=0.001)  # 8.8 %


def _outcomes(key: str, by_source, by_chip) -> int:  # type: ignore[no-untyped-def]
    """How many held-out outcomes the nested coverage of ``key`` counts (``bands.py``: those
    of groups with at least 5 others' errors to make a band from)."""
    split, fam = key.split(":")
    held = [h for h in (by_source if split == "source" else by_chip) if family(h.point) == fam]
    held = [h for h in held if split == "source" or h.relative is not None]
    groups = [h.point.source_id if split == "source" else str(h.point.gpu.chip) for h in held]
    return sum(1 for g in groups if len(groups) - groups.count(g) >= 5)


def test_each_printed_band_covers_what_it_claims_on_its_split(figures, by_source, by_chip) -> None:  # type: ignore[no-untyped-def]
    """Each family's bands cover 70-90 % of their split's held-out outcomes on groups left out
    of the band as well as the fit (nested: a source, a chip; ``bands.py``), recomputed here;
    and at least 80 % of the split's outcomes overall; the unvalidated band covers at least
    85 % of every family's and is at least as wide as each."""
    from gpuscout.predict.bands import nested_coverage

    for key, level in figures.levels.items():
        split, fam = key.split(":")
        pool = by_source if split == "source" else by_chip
        held = [h for h in pool if family(h.point) == fam]
        held = [h for h in held if split == "source" or h.relative is not None]
        logs = [h.absolute if split == "source" else h.relative or 0.0 for h in held]
        groups = [h.point.source_id if split == "source" else str(h.point.gpu.chip) for h in held]
        nested = nested_coverage(logs, groups, level)
        assert nested == pytest.approx(figures.nested[key], abs=1e-3), key
        assert 0.7 <= nested <= 0.9, (key, nested)
    assert set(figures.levels) == {"source:resnet50", "source:bert", "chip:resnet50", "chip:bert"}
    for fam in ("resnet50", "bert"):
        absolute = [h.absolute for h in by_source if family(h.point) == fam]
        relative = [h.relative for h in by_chip
                    if h.relative is not None and family(h.point) == fam]  # fmt: skip
        assert len(absolute) >= 50 and len(relative) >= 50, fam
        assert coverage(absolute, figures.source_absolute[fam]) >= 0.8, fam
        assert coverage(relative, figures.chip_relative[fam]) >= 0.8, fam
        assert coverage(absolute, figures.unvalidated) >= 0.85, fam
        low, high = figures.unvalidated
        assert low <= figures.source_absolute[fam][0] and high >= figures.source_absolute[fam][1]


def test_the_band_follows_the_situation() -> None:
    fig = shipped()
    for workload, fam in (("resnet50", "resnet50"), ("resnet50-v1.5", "resnet50"),
                          ("bert-base", "bert"), ("bert-large", "bert")):  # fmt: skip
        ranged = uncertainty.band(workload)
        assert (ranged.low, ranged.high) == fig.source_absolute[fam]
        assert "whole published sources left out" in ranged.label
        anchored = uncertainty.band(workload, anchored=True)  # a run of the step fixes the stack
        assert (anchored.low, anchored.high) == fig.chip_relative[fam]
        assert "chips left out of the fit, relative" in anchored.label
    for workload, kind in (("mlp", "train"), ("gpt2", "train"), ("resnet50", "forward")):
        ranged = uncertainty.band(workload, kind)
        assert (ranged.low, ranged.high) == fig.unvalidated
        assert "not validated on published data" in ranged.label
        anchored = uncertainty.band(workload, kind, anchored=True)
        assert "not validated on published data" in anchored.label
        assert anchored.low == min(b[0] for b in fig.chip_relative.values())
    assert {"resnet50", "resnet50-v1.5", "bert-base", "bert-large"} == VALIDATED


def test_the_frozen_split_and_the_reserved_sources_stay_out(points) -> None:  # type: ignore[no-untyped-def]
    """The frozen test split exists and is left out of the rows the ranges come from; no
    published row comes from a source reserved as the external test."""
    test = [p for p in points if frozen(p)]
    assert {p.gpu.chip for p in test} >= set(FROZEN_CHIPS)
    assert {p.source_id for p in test} >= set(FROZEN_SOURCES)
    assert shipped().made_from.startswith(f"{len(development(points))} published")
    assert f"split's {len(test)} left out" in shipped().made_from
    cat = load_catalog()
    for row in cat.published:
        text = f"{row.source_id} {row.source}".lower()
        assert not reserved(text), row.source_id
    # the check itself catches each reserved source (and lets other MLPerf rounds through)
    assert reserved("mlperf training v3.1 nvidia dgx h100") and reserved("vectorlm reference")
    assert reserved("nvidia deeplearningexamples tensorflow bert readme")
    assert not reserved("mlperf training v2.1 results, nvidia")
    assert math.isfinite(shipped().relative_error)


# Issue 29's and 41's bars on the development rows, and the figures docs/predict.md quotes
# (``make bench-predict``: relative 8.2 % by source, 8.2 % by chip; absolute 10.2 % by source),
# each with a stated margin for floating-point differences between CPUs.
MARGIN = 0.005


def test_the_accuracy_docs_quote_holds_on_any_cpu(by_source, by_chip) -> None:  # type: ignore[no-untyped-def]
    """Relative error held out by whole source <= 10 % and by chip <= 12 % for ResNet-50 and
    for BERT; absolute error by source as quoted, within issue 41's 15 %."""
    for fam in ("resnet50", "bert"):
        src = [h.relative for h in by_source if h.relative is not None and family(h.point) == fam]
        chip = [h.relative for h in by_chip if h.relative is not None and family(h.point) == fam]
        assert mape(src) <= 0.10, (fam, mape(src))
        assert mape(chip) <= 0.12, (fam, mape(chip))
    relative = [h.relative for h in by_source if h.relative is not None]
    assert mape(relative) == pytest.approx(0.082, abs=MARGIN)
    assert mape([h.relative for h in by_chip if h.relative is not None]) == pytest.approx(
        0.082, abs=MARGIN
    )
    assert mape([h.absolute for h in by_source]) == pytest.approx(0.102, abs=MARGIN)
    assert mape([h.absolute for h in by_source]) <= 0.15


@pytest.mark.parametrize("measured", [1_000.0, 2_500.0])
def test_a_stored_run_anchors_its_gpu_exactly_and_the_others_take_the_chips_band(
    measured: float,
) -> None:
    """Issue 41: one stored A100 ResNet-50 run at 2,500 img/s was priced at 1,390 on that very
    A100 (the run was one point in the fit, its stack factor on a bound). Anchored, the A100
    shows what was measured, whatever the model thought of it, and the others take the band of
    chips left out of the fit, relative: the run fixes the stack."""
    from gpuscout.predict.profile import cached
    from gpuscout.predict.session import session
    from tests.cli.test_one_prediction import _a100_run

    cat = load_catalog()
    profile = cached("resnet50", {}, 256, "mixed_float16")
    assert profile is not None
    a100, h100 = cat.gpus["a100-40gb-sxm"], cat.gpus["h100-sxm"]
    plain, _ = session(cat, runs=[]).predict(profile, [a100, h100])
    model = session(cat, runs=[_a100_run(measured).model_copy(update={"id": 7})])
    assert model.run_ids == (7,)
    rows, _ = model.predict(profile, [a100, h100])
    assert rows[0].samples_per_second == measured
    assert (rows[0].low, rows[0].high) == (measured * 0.99, measured * 1.01)
    ratio = plain[1].samples_per_second / plain[0].samples_per_second
    assert rows[1].samples_per_second == pytest.approx(measured * ratio)
    fig = shipped()
    low, high = fig.chip_relative["resnet50"]
    assert rows[1].low == pytest.approx(rows[1].samples_per_second * low)
    assert rows[1].high == pytest.approx(rows[1].samples_per_second * high)
    ranged = model.band(profile)
    assert (ranged.low, ranged.high) == (low, high) and "chips left out" in ranged.label
    bert = cached("bert-base", {"seq_len": 128}, 32, "mixed_float16")
    assert bert is not None
    assert not model.anchors(bert).anchored  # no stored BERT run: the sources' band
    assert (model.band(bert).low, model.band(bert).high) == fig.source_absolute["bert"]
