"""Which attention kernel the shared Keras decoder (``llama.py``) calls: ``keras.ops``' own,
or one a backend puts in its place while it traces the step.

The backend sets it (JAX's ``fused_attention.traced_as_fused`` puts the fused kernel's custom
calls there while ``predict`` traces); the Keras code only reads it. So the shared Keras folder
imports no backend, and no import circle runs through a backend's folder
(``tests/test_layers.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Attention = Callable[[Any, Any, Any, bool], Any]  # (q, k, v, causal) -> output
_OVERRIDE: list[Attention | None] = [None]


@contextmanager
def attention_traced_as(kernel: Attention) -> Iterator[None]:
    """Within: the decoder's attention is ``kernel`` (a backend's, for a trace)."""
    before = _OVERRIDE[0]
    _OVERRIDE[0] = kernel
    try:
        yield
    finally:
        _OVERRIDE[0] = before


def attention_override() -> Attention | None:
    """The kernel a backend put in place, or None: ``keras.ops.dot_product_attention``."""
    return _OVERRIDE[0]
