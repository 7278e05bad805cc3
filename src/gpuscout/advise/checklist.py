"""The source articles' four-question checklist, exactly, and what it leaves out.

Three or more "yes" -> a data-center GPU (A100/H100 class); otherwise an RTX 4090. The rule is
reproduced as stated so users can compare; the blind spots are then named, because the rule
never asks whether the model fits in memory, what the run costs, or when it must be done.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gpuscout.errors import UserError

QUESTIONS = (
    "Is the model larger than 10B parameters?",
    "Does a single training run take more than 24 hours?",
    "Is multi-tenant isolation or fine-grained GPU sharing needed?",
    "Does inference have an SLA of 99.99% or more?",
)
MISSED = (
    "memory fit: a 10B+ model does not fit one 80 GB GPU for full training (16 bytes per "
    "parameter with Adam), while LoRA on a 7B model fits a 24 GB RTX 4090 — "
    "run 'gpuscout memory'",
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
    recommendation = "A100/H100 (data-center class)" if yes >= 3 else "RTX 4090"
    return QuickAnswer(
        answers=answers,
        yes_count=yes,
        recommendation=recommendation,
        rule="3 or more 'yes' -> data-center class (A100/H100), otherwise RTX 4090 (the articles)",
        missed=list(MISSED),
    )
