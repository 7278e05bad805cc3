"""Attention as one fused kernel in a traced step, where the GPU would run cuDNN's.

Keras on JAX runs ``keras.ops.dot_product_attention`` as cuDNN's fused (flash) attention on an
Ampere or newer GPU in float16 or bfloat16 (``keras/src/backend/jax/nn.py``,
``_can_use_flash_attention``), and as XLA's unfused ops elsewhere. ``predict`` traces the step
on a machine without a GPU, where JAX lowers the unfused path: a score matrix of L x L per head
written, softmaxed, kept for the backward pass and read again, which a fused kernel never
writes (for an 8B decoder at 2,048 tokens, 48 of 67 GB and half of the predicted step on an
A100). cuDNN's kernel cannot be lowered without cuDNN, so the trace puts two custom calls in
its place with the shapes the kernel reads and writes (forward: the output and the softmax's
log-sum-exp; backward: the gradients of q, k and v), and ``predict/hlo_text.py`` costs them.
Only traced, never run: the calls name no kernel that exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gpuscout.core.step_ir import CAUSAL, FUSED_ATTENTION_BACKWARD, FUSED_ATTENTION_FORWARD


@contextmanager
def traced_as_fused() -> Iterator[None]:
    """Within: the decoder's attention (``keras/llama.py``) is traced as the fused kernel,
    put in its place through ``keras/attention.py`` (the shared Keras code imports no
    backend)."""
    from gpuscout.measure.backends.keras.attention import attention_traced_as

    with attention_traced_as(fused_attention):
        yield


def fused_attention(q: Any, k: Any, v: Any, causal: bool) -> Any:
    """``(batch, length, heads, head_dim)`` queries and ``(batch, length, kv_heads,
    head_dim)`` keys and values to the attention's output, as the two custom calls."""
    import jax
    import jax.numpy as jnp

    suffix = CAUSAL if causal else ""

    def like(x: Any) -> Any:
        return jax.ShapeDtypeStruct(x.shape, x.dtype)  # type: ignore[no-untyped-call]

    def forward(q: Any, k: Any, v: Any) -> tuple[Any, Any]:
        lse = jax.ShapeDtypeStruct(q.shape[:3], jnp.float32)  # type: ignore[no-untyped-call]
        out, logsumexp = jax.ffi.ffi_call(FUSED_ATTENTION_FORWARD + suffix, (like(q), lse))(q, k, v)
        return out, (q, k, v, out, logsumexp)

    def backward(saved: tuple[Any, ...], d_out: Any) -> tuple[Any, Any, Any]:
        q, k, v, _, _ = saved
        grads = jax.ffi.ffi_call(FUSED_ATTENTION_BACKWARD + suffix, (like(q), like(k), like(v)))(
            *saved, d_out
        )
        return tuple(grads)  # type: ignore[return-value]

    @jax.custom_vjp
    def attention(q: Any, k: Any, v: Any) -> Any:
        return forward(q, k, v)[0]

    attention.defvjp(forward, backward)
    return attention(q, k, v)
