"""The published fine-tuning check's stored summary (``data/finetuning_accuracy.json``) and
what ``predict`` says of a decoder LLM's range from it.

Apart from ``finetuning_check.py``, which predicts each row through ``request.py``: a range is
chosen below the session (``uncertainty.py``), so reading the summary must not import the
request layer above it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path


@dataclass
class Summary:
    """The error on one set of rows (all MAPE, predicted / published per GPU)."""

    rows: int
    sources: int
    gpus: list[str]
    mape: float
    median_ratio: float
    inside_range: float  # share of published values inside the predicted range
    relative_mape: float | None
    relative_pairs: int
    by_source: dict[str, float] = field(default_factory=dict)
    by_mode: dict[str, float] = field(default_factory=dict)


def _path() -> Path:
    return Path(str(resources.files("gpuscout.predict").joinpath("data/finetuning_accuracy.json")))


def write(validation: Summary) -> Path:
    path = _path()
    body = {"validation": asdict(validation)}
    path.write_text(json.dumps(body, indent=1, sort_keys=True) + "\n")
    return path


@cache
def shipped() -> Summary | None:
    """The stored figures, or None before any were written."""
    try:
        body = json.loads(_path().read_text())
    except OSError:
        return None
    return Summary(**body["validation"])


def range_note(workload: str) -> str:
    """What ``predict`` says of a decoder LLM's range: the published check, if stored."""
    figures = shipped()
    base = (f"{workload}: the range is the widest of the validated workloads' bands (and of "
            "their errors' middle 90 %), an assumption")  # fmt: skip
    if figures is None:
        return f"{base}; not validated on published data"
    v = figures
    return (
        f"{base}; checked on {v.rows} published fine-tuning rows of 7-8B decoders from "
        f"{v.sources} sources on {', '.join(v.gpus)} (none used to fit or design it): tokens/s "
        f"off by {v.mape:.0%} on average (predicted / published, median x{v.median_ratio:.2f}), "
        f"{v.inside_range:.0%} of them inside their range (QLoRA rows predicted as LoRA with "
        "a 16-bit base; docs/predict.md)"
    )


__all__ = ["Summary", "range_note", "shipped", "write"]
