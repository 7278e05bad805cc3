"""The articles' four-question checklist (:mod:`gpuscout.core.articles`), exactly, and what it
leaves out.

Three or more "yes" -> a data-center GPU (A100/H100 class); otherwise an RTX 4090. The rule is
reproduced as stated so users can compare; the blind spots are then named, because the rule
never asks whether the model fits in memory, what the run costs, or when it must be done.
When a full recommendation is made for the same job, :func:`versus_advice` says why the two
answers differ: they answer different questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from gpuscout.advise.memory import Transformer, memory_fit
from gpuscout.core import articles
from gpuscout.core.errors import UserError
from gpuscout.core.units import fmt_hours, fmt_usd

QUESTIONS = articles.CHECKLIST_QUESTIONS
# The articles' LoRA claim (article 002: "LoRA fine-tuning of a 7B model fits a 24 GB card"),
# checked at a stated sequence length: at ``memory``'s default of 2048 tokens it does not fit.
LORA_7B = Transformer(7e9, 32, 4096, 32, seq_len=512, batch=1, mode="lora")  # Llama-2-7B shape
LORA_DEFAULT_SEQ_LEN = 2048  # gpuscout memory's default for an LLM
LORA_GPU_GB = 24.0  # the RTX 4090's memory


def lora_sentence() -> str:
    """The articles' LoRA claim with the sequence length it holds at, computed by the same
    functions ``gpuscout memory --mode lora`` uses, so the two never disagree."""
    from gpuscout.advise.llm_memory import llm_memory  # the figure memory prints

    short = memory_fit(llm_memory(LORA_7B).breakdown, LORA_GPU_GB)
    at_default = replace(LORA_7B, seq_len=LORA_DEFAULT_SEQ_LEN)
    long = memory_fit(llm_memory(at_default).breakdown, LORA_GPU_GB)
    fits = "fits" if short.verdict == "fits" else "does not fit"
    long_fits = "fits" if long.verdict == "fits" else "does not fit on one"
    return (
        f"LoRA (rank {LORA_7B.lora_rank}) on a 7B model {fits} a {LORA_GPU_GB:g} GB RTX 4090 "
        f"at sequence length {LORA_7B.seq_len} ({short.need_gb:.1f} GB, micro-batch "
        f"{LORA_7B.batch}); at {LORA_DEFAULT_SEQ_LEN} it needs {long.need_gb:.1f} GB and "
        f"{long_fits}"
    )


MISSED = (
    "memory fit: a 10B+ model does not fit one 80 GB GPU for full training (16 bytes per "
    f"parameter with Adam), while {lora_sentence()} — run 'gpuscout memory --mode lora "
    "--seq-len N'",
    "cost: the rule never prices the run; 'gpuscout cost' does",
    "deadline and speed: the rule ignores how fast each option finishes; 'gpuscout predict' "
    "and 'gpuscout advise --workload ... --deadline' account for it",
    "multi-GPU interconnect: 4090s have no NVLink, which matters for communication-heavy models",
)


@dataclass
class QuickAnswer:
    answers: list[bool]
    yes_count: int
    recommendation: str
    rule: str
    missed: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_answers(text: str) -> list[bool]:
    """'yes,no,yes,no' (or y/n, true/false, 1/0) -> four booleans."""
    words = [w.strip().lower() for w in text.split(",")]
    if len(words) != len(QUESTIONS):
        raise UserError(
            f"--answers needs {len(QUESTIONS)} answers, got {len(words)} ('{text}').",
            "give them in order, e.g. --answers yes,no,yes,no.",
        )
    out = []
    for word in words:
        if word in ("yes", "y", "true", "1"):
            out.append(True)
        elif word in ("no", "n", "false", "0"):
            out.append(False)
        else:
            raise UserError(f"'{word}' in --answers is not yes or no.", "use yes/no.")
    return out


def quick(answers: list[bool]) -> QuickAnswer:
    """The articles' rule: three or more yes -> data-center GPU, else RTX 4090."""
    if len(answers) != len(QUESTIONS):
        raise UserError(f"the checklist has {len(QUESTIONS)} questions.", None)
    yes = sum(answers)
    enough = articles.CHECKLIST_YES_FOR_DATACENTER
    recommendation = articles.CHECKLIST_DATACENTER if yes >= enough else articles.CHECKLIST_DEFAULT
    return QuickAnswer(
        answers=answers,
        yes_count=yes,
        recommendation=recommendation,
        rule=f"{enough} or more 'yes' -> {articles.CHECKLIST_DATACENTER}, otherwise "
        f"{articles.CHECKLIST_DEFAULT} (articles 000 and 002, see gpuscout.core.articles)",
        missed=list(MISSED),
    )


# The four questions as the one sentence a report can open with (articles.CHECKLIST_QUESTIONS).
SHORT_QUESTIONS = (
    f"over {articles.CHECKLIST_PARAMS / 1e9:g}B parameters?",
    f"a training run over {articles.CHECKLIST_RUN_HOURS:g} h?",
    "multi-tenant isolation or GPU sharing?",
    "an inference SLA of 99.99 %?",
)


def rule_sentence(answer: QuickAnswer) -> str:
    """The checklist and its answer in one sentence, for a reader who never read the articles:
    "articles 000 and 002" and "1 x yes" mean nothing until the rule is said."""
    return (
        f"The articles' checklist asks four yes/no questions ({' '.join(SHORT_QUESTIONS)}) "
        f"and says {articles.CHECKLIST_DATACENTER} for {articles.CHECKLIST_YES_FOR_DATACENTER} "
        f"or more yes, else {articles.CHECKLIST_DEFAULT}: here {answer.yes_count} of "
        f"{len(answer.answers)} yes, so {answer.recommendation}."
    )


class Option(Protocol):
    """What :func:`versus_advice` reads of a recommendation's option (``Candidate``)."""

    gpu: str
    count: int
    provider: str
    hours: float
    total_usd: float


def _is_checklist_gpu(answer: str, gpu_id: str) -> bool:
    return gpu_id.startswith(articles.CHECKLIST_GPU_IDS.get(answer, ()))


def agrees(answer: QuickAnswer, ranked: Sequence[Option]) -> bool:
    """Whether the first recommended option is of the kind the checklist names."""
    return bool(ranked) and _is_checklist_gpu(answer.recommendation, ranked[0].gpu)


def versus_advice(answer: QuickAnswer, ranked: Sequence[Option], objective: str) -> str:
    """Why the checklist's answer and the first recommended option differ, or that they agree.

    The checklist is a rule of thumb from four yes/no questions: it never prices the job or
    asks how fast an option finishes it. The recommendation predicts and prices this job on
    every option in the catalog and ranks them by ``objective``, so where they differ the
    sentence sets the best option of the checklist's kind beside the first one.
    """
    if not ranked:
        return ""
    first = ranked[0]
    label = f"{first.count} x {first.gpu} ({first.provider})"
    if _is_checklist_gpu(answer.recommendation, first.gpu):
        return (
            f"The checklist's answer ({answer.recommendation}) and the first recommended "
            f"option ({label}) agree."
        )
    ranking = "by time x cost" if objective == "balanced" else f"{objective} first"
    why = (
        f"The checklist says {answer.recommendation} and the recommendation {label} because "
        "they answer different questions: the checklist is the articles' rule of thumb from "
        "four yes/no questions and never prices the job or asks how fast it finishes; the "
        f"recommendation predicts and prices this job on every option and ranks them {ranking}"
    )
    same = [c for c in ranked if _is_checklist_gpu(answer.recommendation, c.gpu)]
    if not same:
        return f"{why}. No {answer.recommendation} option was priced for this job."
    best = same[0]
    return (
        f"{why}: {label} takes {fmt_hours(first.hours)} for {fmt_usd(first.total_usd)}; the "
        f"best {answer.recommendation} option, {best.count} x {best.gpu} ({best.provider}), "
        f"takes {fmt_hours(best.hours)} for {fmt_usd(best.total_usd)} "
        f"(#{ranked.index(best) + 1})."
    )
