"""Which catalog GPUs a claim can be about.

Published claims often name a family ("A100") rather than a part. Rather than refuse, an audit
judges such a claim against every part the name fits and keeps the verdict most favourable to
the claim: a claim is called impossible only if it is impossible on every candidate.
"""

from __future__ import annotations

from gpuscout.catalog import Catalog, Gpu


def claim_gpus(catalog: Catalog, name: str) -> tuple[list[Gpu], list[str]]:
    """The candidate GPUs for a name, and the assumption made in choosing them."""
    found = catalog.resolver.find(name)
    if found is not None:
        return [found.gpu], [found.assumption] if found.assumption else []
    candidates = catalog.resolver.candidates(name)
    if len(candidates) < 2:
        catalog.resolve(name)  # raises the unknown-name error, with did-you-mean
    ids = ", ".join(g.id for g in candidates)
    note = f"'{name}' fits {len(candidates)} GPUs ({ids}); judged against the one most favourable"
    return candidates, [f"{note} to the claim"]
