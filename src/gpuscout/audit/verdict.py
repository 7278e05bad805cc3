"""What an audit says about one claim: the verdict, the numbers behind it, and their sources."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

SpeedVerdict = Literal["impossible", "implausible", "plausible"]
SpecVerdict = Literal["confirmed", "contradicted", "unverifiable"]


@dataclass
class ClaimVerdict:
    kind: Literal["speed", "spec"]
    claim: str
    gpu_id: str
    gpu_name: str
    verdict: SpeedVerdict | SpecVerdict
    numbers: dict[str, float | str | None] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    assumptions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)
