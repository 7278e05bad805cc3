"""The base of every record: frozen (a result is a fact) and strict (a stored or imported run
with a field gpuscout does not know is refused, not silently dropped)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
