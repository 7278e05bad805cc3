"""How far off a prediction may be: its range (:class:`Band`) and the relative error that
separates two options, from out-of-sample errors only (``out_of_sample.py``, ``bands.py``).

The split that matches the user's situation picks the band: no measured run of the step,
whole published sources left out (absolute: the user's software is unseen too); anchored on a
measured run of the very step (``anchoring.py``), chips left out and relative (the run fixes
the software stack: only the ratio between GPUs is predicted); a workload or mode no published
row validates, the widest of those bands, said. It sits above the calibration and its
held-out figures and below the session, so the calibration imports nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuscout.predict.out_of_sample import FAMILIES, shipped
from gpuscout.workloads.llm import LLAMA_NAMES

# Published rows validate these workloads, in training only: any other (mlp, cnn-small, gpt2*,
# your own model, a forward pass) gets the wider band and says so. Both ResNet-50s: the rows of
# each source are modelled with the variant it trains (data/resnet50_variants.csv).
VALIDATED = frozenset({"resnet50", "resnet50-v1.5", "bert-base", "bert-large"})


@dataclass(frozen=True)
class Band:
    """A prediction's range: factors on the predicted speed, and which held-out errors it
    comes from (``out_of_sample.Figures``, ``bands.py``)."""

    low: float
    high: float
    label: str


def band(workload: str = "resnet50", kind: str = "train", anchored: bool = False) -> Band:
    """The range of a prediction of ``workload`` (``kind``: train or forward), anchored on a
    measured run of the same step or not."""
    figures = shipped()
    family = FAMILIES.get(workload, workload)
    if workload not in VALIDATED or kind != "train":
        what = "inference" if kind != "train" else workload
        if anchored:
            low, high = widest_chip_band()
            return Band(low, high, f"{what}: relative to your measured run, not validated on "
                        "published data; the range is the widest of the validated workloads' "
                        "chip-relative bands, an assumption")  # fmt: skip
        low, high = figures.unvalidated
        if workload in LLAMA_NAMES and kind == "train":
            from gpuscout.predict.finetuning_summary import range_note

            return Band(low, high, range_note(workload))
        return Band(low, high, f"{what}: not validated on published data; the range is the "
                    "widest of the validated workloads' bands (and of their errors' middle "
                    "90 %), an assumption")  # fmt: skip
    if anchored and family in figures.chip_relative:
        low, high = figures.chip_relative[family]
        covered = figures.nested.get(f"chip:{family}")
        held = f"; it covered {covered:.0%} of a chip left out of the band too" if covered else ""
        return Band(low, high, f"{family}'s band of chips left out of the fit, relative: your "
                    "measured run fixes the software stack, so only the ratio between GPUs is "
                    f"predicted{held}")  # fmt: skip
    low, high = figures.source_absolute.get(family, figures.unvalidated)
    covered = figures.nested.get(f"source:{family}")
    held = f"; it covered {covered:.0%} of a source left out of the band too" if covered else ""
    return Band(
        low,
        high,
        f"{family}'s band of whole published sources left out of the fit (their software "
        f"stack unseen, as yours is{held})",
    )


def widest_chip_band() -> tuple[float, float]:
    """The widest of the validated families' chip-relative bands: an anchored workload no
    published row validates takes it, and measured GPUs whose ratios to the model differ by
    more than it disagree."""
    relative = shipped().chip_relative.values()
    return min(b[0] for b in relative), max(b[1] for b in relative)


def relative_error() -> float:
    """How far off a speed relative to another GPU is, out of sample (leave one source out,
    80th percentile): options closer than this are not ranked."""
    return shipped().relative_error


def range_note(b: Band) -> str:
    """One line for a command that prints a prediction's time or cost without its range: how
    far off it may be, and which held-out errors say so."""
    return (
        f"each predicted speed may be off by x{b.low:.2f} to x{b.high:.2f} (times and costs by "
        f"the inverse): {b.label}"
    )


def screen_factor() -> float:
    """How far off the published rows' prediction a stored run may be and still anchor one:
    twice the far end of the model's widest band (a workload no published row validates:
    x0.69 to x1.30 today, so about x2.9). A run further off than twice what a whole unseen
    source is off is a mistake (a wrong batch, a bogus import), not a software stack."""
    low, high = shipped().unvalidated
    return 2 * max(1 / low, high)


__all__ = [
    "VALIDATED",
    "Band",
    "band",
    "range_note",
    "relative_error",
    "screen_factor",
    "widest_chip_band",
]
