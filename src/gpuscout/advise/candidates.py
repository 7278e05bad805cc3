"""The records of a recommendation: the job and its constraints (``Request``), one priced
option (``Candidate``) and the whole answer (``Advice``), kept apart from the ranking
(``advise.recommend``) and its notes (``advise.notes``) that build them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from gpuscout.advise.ties import DEFAULT_OBJECTIVE, Objective
from gpuscout.predict.profile import Profile

__all__ = ["Advice", "Candidate", "Request", "dollars"]


@dataclass(frozen=True)
class Request:
    profile: Profile
    samples: float
    unit: str
    deadline_hours: float | None = None
    budget_usd: float | None = None
    require: frozenset[str] = frozenset()
    owned: bool = False
    cloud: bool = True
    providers: frozenset[str] | None = None
    counts: tuple[int, ...] = (1, 2, 4, 8)
    counts_given: bool = False  # --counts typed: a count above the job's samples is refused
    gpus: frozenset[str] | None = None  # only these catalog ids (--gpus); None: every GPU
    data_gb: float = 0.0  # copied into each rented machine before its first step (--data-gb)
    objective: Objective = DEFAULT_OBJECTIVE
    label: str | None = None  # the job in words (predict.job.Job.label), else samples of W
    # The batch (issue 42, "batch as a decision"). ``fixed_batch`` (-b): the profile's batch
    # per GPU on every option, the global batch its count times it. Else each option's batch
    # per GPU is chosen: the largest that fits its memory up to ``global_batch`` / its GPUs
    # (gradient accumulation where that share does not fit), ``global_batch`` None: the
    # profile's own batch; ``batch_source`` says where the global batch came from.
    global_batch: int | None = None
    fixed_batch: bool = False
    batch_source: str = ""

    @property
    def samples_per_step(self) -> int:
        """The global batch the options share (``fixed_batch``: one GPU's)."""
        return self.global_batch or self.profile.batch


@dataclass
class Candidate:
    gpu: str
    count: int
    provider: str
    hours: float
    usd_per_hour: float
    total_usd: float  # effective: cost + failure rework + delay
    samples_per_second: float
    memory_gb: float
    pareto: bool = False
    reasons: list[str] = field(default_factory=list)
    # Money paid, which a budget is compared with: an owned option's purchase before the job
    # (``total_usd`` is the share of it amortised over this job), a rented one's rental for
    # the job (hours, failure rework included, x $/h; a cost of delay is not paid).
    upfront_usd: float | None = None  # owned
    rental_usd: float | None = None  # rented
    price_note: str = ""  # how the price was set (instance size, purchase price's source)
    startup_hours: float = 0.0  # rented: a machine's start-up, in ``hours`` and the cost
    # where your stored run measured this GPU: what it measured, and how this option follows
    measured: str = ""
    # the ends of the prediction's range (``Prediction.low``/``high``): the job's hours at
    # the fast and the slow end, and the money paid at the slow end (a rental runs longer)
    fast_hours: float = 0.0
    slow_hours: float = 0.0
    slow_paid_usd: float = 0.0
    # what the deadline or budget risk at the range's slow end (empty: safe, or none given)
    risks: list[str] = field(default_factory=list)
    condition: str = ""  # owned: "new" or "used"
    # the batch per GPU this option runs (a micro-batch where it accumulates), the gradient
    # accumulation steps of one optimizer step, and the samples of that step on all its GPUs
    batch: int = 0
    accumulation: int = 1
    global_batch: int = 0
    # a larger batch much faster on this option's GPU, in words (``predict.batch_hint``)
    batch_hint: str = ""
    break_even: str = ""  # owned: against the cheapest rental of as many (price.break_even)

    @property
    def label(self) -> str:
        """'1 x rtx-3090 (owned, used)', '8 x h100-sxm (runpod)': the option's name wherever
        it is printed (ties, the table, the headline's alternative)."""
        used = ", used" if self.condition == "used" else ""
        return f"{self.count} x {self.gpu} ({self.provider}{used})"

    @property
    def paid_basis(self) -> Literal["up-front", "rental"]:
        return "up-front" if self.upfront_usd is not None else "rental"

    @property
    def paid_usd(self) -> float:
        """The money the budget is compared with (see ``paid_basis``)."""
        return self.upfront_usd if self.upfront_usd is not None else self.rental_usd or 0.0

    def to_json_dict(self) -> dict[str, Any]:
        return {**asdict(self), "paid_usd": self.paid_usd, "paid_basis": self.paid_basis}


@dataclass
class Advice:
    ranked: list[Candidate]
    pareto: list[Candidate]
    rejected: dict[str, int]
    assumptions: list[str]
    budget_usd: float | None = None  # compared with each option's ``paid_usd``
    # a much faster larger batch on the first option's GPU, in words (``predict.batch_hint``)
    batch_hint: str | None = None
    # what the predictions cannot see (``predict.caveats``): printed beside the ranking by
    # every command that shows it, not among the assumptions
    caveats: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "ranked": [c.to_json_dict() for c in self.ranked],
            "pareto": [c.to_json_dict() for c in self.pareto],
            "rejected": self.rejected,
            "assumptions": self.assumptions,
            "batch_hint": self.batch_hint,
            "caveats": self.caveats,
            "budget": None if self.budget_usd is None else {
                "usd": self.budget_usd,
                "compared_with": "paid_usd: an owned option's up-front purchase, a rented "
                "option's rental for the job",
            },
        }  # fmt: skip


def dollars(usd: float) -> str:
    """Money set against a budget, to the dollar (cents below $100): rounded to three
    figures, $1,998 would print as $2,000 beside a $2,000 budget."""
    return f"${usd:,.2f}" if usd < 100 else f"${usd:,.0f}"
