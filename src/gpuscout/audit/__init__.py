"""Checking published claims against physics and the catalog. Nothing here imports TensorFlow."""

from __future__ import annotations

from collections.abc import Iterable

from gpuscout.audit.claims import Claim, read_claims
from gpuscout.audit.relative import RelativeClaim, RelativeVerdict, judge_relative, parse_relative
from gpuscout.audit.spec import SpecClaim, audit_spec
from gpuscout.audit.speed import SpeedClaim, audit_speed
from gpuscout.audit.verdict import ClaimVerdict
from gpuscout.catalog import Catalog


def audit(claims: Iterable[Claim], catalog: Catalog) -> list[ClaimVerdict]:
    """The verdict on each claim, in order."""
    return [
        audit_spec(c, catalog) if isinstance(c, SpecClaim) else audit_speed(c, catalog)
        for c in claims
    ]


__all__ = [
    "Claim",
    "ClaimVerdict",
    "RelativeClaim",
    "RelativeVerdict",
    "SpecClaim",
    "SpeedClaim",
    "audit",
    "audit_spec",
    "audit_speed",
    "judge_relative",
    "parse_relative",
    "read_claims",
]
