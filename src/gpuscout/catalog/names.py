"""Forgiving GPU names: "4090", "rtx4090", "A100 80G SXM", "NVIDIA A100-SXM4-40GB" all resolve.

A name is split into tokens (lower case, separators dropped, "80G"/"80 GB" -> "80gb", "rtx4090"
-> "rtx 4090", vendor words dropped). It resolves to the GPU whose id, name or alias has exactly
those tokens; failing that, to the only GPU whose tokens include them all. Several candidates
is an error that lists them: guessing between an A100 40GB and 80GB would silently change every
number downstream. An alias written with a leading ``*`` is a naming *convention* ("A100 80GB"
usually means the SXM4 part); resolving through one reports the assumption.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpuscout.catalog.models import Gpu
from gpuscout.core.errors import UserError, closest

_NOISE = frozenset({"nvidia", "geforce", "tesla", "gpu", "card"})
# What of a form factor names the part ("SXM4", "PCIe"): its other words ("Superchip (NVLink-C2C
# to a Grace CPU)", "PCIe card (AWS G5 only)") would let "a" or "only" resolve to one GPU.
_FORM = re.compile(r"pcie|sxm\d*|nvl\d*|superchip")


def tokens(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for raw in re.split(r"[^a-z0-9]+", text.lower()):
        if not raw or raw in _NOISE:
            continue
        if raw in ("g", "gb", "gib") and out and out[-1].isdigit():
            out[-1] += "gb"  # "80 GB" -> "80gb"
            continue
        split = re.fullmatch(r"(rtx|gtx)(\d+)", raw)
        if split:
            out.extend(split.groups())
            continue
        out.append(re.sub(r"^(\d+)g(?:ib|b)?$", r"\1gb", raw))
    return tuple(out)


def _key(text: str) -> str:
    return " ".join(tokens(text))


@dataclass(frozen=True)
class Resolved:
    gpu: Gpu
    assumption: str | None = None  # set when a naming convention picked one part of several


class Resolver:
    """Name -> GPU over a fixed set of GPUs."""

    def __init__(self, gpus: Iterable[Gpu]) -> None:
        self._gpus = list(gpus)
        self._exact: dict[str, list[tuple[Gpu, bool]]] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        for gpu in self._gpus:
            names = [(gpu.id, False), (gpu.name, False)]
            names += [(a.lstrip("*"), a.startswith("*")) for a in gpu.aliases]
            toks: set[str] = set()
            for name, convention in names:
                self._exact.setdefault(_key(name), []).append((gpu, convention))
                toks.update(tokens(name))
            toks.update(t for t in tokens(gpu.form_factor) if _FORM.fullmatch(t))
            toks.update(t[:3] for t in list(toks) if re.fullmatch(r"sxm\d", t))  # sxm4 -> sxm
            self._tokens[gpu.id] = frozenset(toks)

    def candidates(self, name: str) -> list[Gpu]:
        wanted = set(tokens(name))
        return [g for g in self._gpus if wanted and wanted <= self._tokens[g.id]]

    def find(self, name: str) -> Resolved | None:
        """The GPU a name means, or None when it is unknown or ambiguous."""
        key = _key(name)
        exact = {g.id: (g, conv) for g, conv in self._exact.get(key, [])}
        if len(exact) == 1:
            gpu, convention = next(iter(exact.values()))
            if not convention:
                return Resolved(gpu)
            others = [g.id for g in self.candidates(name) if g.id != gpu.id]
            also = f"; also fits {', '.join(others)}" if others else ""
            return Resolved(gpu, f"'{name}' taken as {gpu.name} ({gpu.id}){also}")
        found = self.candidates(name)
        return Resolved(found[0]) if len(found) == 1 else None

    def resolve(self, name: str) -> Resolved:
        """Like :meth:`find`, but an unknown or ambiguous name is a one-line user error."""
        if not tokens(name):
            raise UserError(f"'{name}' is not a GPU name.", "give a name such as 'rtx-4090'.")
        found = self.find(name)
        if found is not None:
            return found
        cands = self.candidates(name)
        if cands:
            listed = ", ".join(f"{g.id} ({g.name})" for g in cands)
            raise UserError(
                f"GPU name '{name}' is ambiguous: it fits {listed}.",
                f"name one of them, e.g. '{cands[0].id}'.",
            )
        choices = {_key(n): g.id for g in self._gpus for n in (g.id, g.name)}
        # a model number the name carries ('5090' of '5090ti') decides before spelling does:
        # one character off, '3090ti' would win, a card two generations away
        numbers = re.findall(r"\d{3,}", name)
        same = {k: v for k, v in choices.items() if any(n in k for n in numbers)}
        near = closest(_key(name), same) if same else None
        if same and near is None and len(set(same.values())) == 1:
            near = next(iter(same))
        near = near or closest(_key(name), choices)
        hint = f" Did you mean '{choices[near]}'?" if near else ""
        raise UserError(
            f"unknown GPU '{name}'.{hint}",
            "run 'gpuscout specs' for the catalog, or add the GPU with --catalog FILE.",
        )
