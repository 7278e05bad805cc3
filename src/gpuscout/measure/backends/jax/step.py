"""The JAX training step: stateless, jitted, the one ``bench --backend jax`` times.

Its own module because everything on JAX that trains or counts a step shares it: the backend's
timed loop (``backend.py``), the doctor's trials (``doctor.py``, run eagerly for the jax.jit
fix), the cost profiles (``hlo.py``, from shapes alone for the decoder LLMs) and the tests.
"""

from __future__ import annotations

from typing import Any

from gpuscout.measure.backends.jax.sharding import Replicas


def train_step(
    jax: Any, built: Any, precision: str, jit: bool = True, replicas: Replicas | None = None,
    abstract: bool = False,
) -> tuple[Any, Any]:  # fmt: skip
    """The jitted step ``(state, x, y) -> (state, loss)`` and the model's initial state
    (``jit=False``: the same step run eagerly, op by op, for the doctor's jax.jit fix;
    ``replicas``: jitted data parallel over their Mesh, see ``jax/sharding.py``).

    The stateless Keras 3 pattern: ``stateless_call`` for the forward pass (the non-trainable
    state, e.g. dropout's seed, comes back updated), ``jax.value_and_grad`` of the loss,
    ``optimizer.stateless_apply`` for the update, and the state's buffers donated to the next
    step. float16 scales the loss (LossScaleOptimizer), as the TensorFlow step does. With
    ``built.checkpointing`` the loss is taken through ``jax.checkpoint``: the backward pass
    recomputes each block from its input (one more forward pass of work, far less memory).
    """
    import keras

    from gpuscout.measure.backends.keras.fit import with_loss_scaling

    model, loss_fn = built.model, built.loss
    optimizer = with_loss_scaling(built.optimizer, precision)
    if abstract:  # ``abstract``: the state as shapes only, its variables never allocated
        with keras.StatelessScope(initialize_variables=False):
            optimizer.build(model.trainable_variables)
    else:
        optimizer.build(model.trainable_variables)

    def loss_and_state(tv: Any, ntv: Any, ov: Any, x: Any, y: Any) -> Any:
        pred, ntv = model.stateless_call(tv, ntv, x, training=True)
        loss = loss_fn(y, keras.ops.cast(pred, "float32"))
        with keras.StatelessScope(state_mapping=list(zip(optimizer.variables, ov, strict=True))):
            scaled = optimizer.scale_loss(loss)
        return scaled, (loss, ntv)

    if built.checkpointing:  # keep each block's input, recompute the rest in the backward pass
        from gpuscout.measure.backends.keras.llama import KEPT

        policy = jax.checkpoint_policies.save_only_these_names(KEPT)
        loss_and_state = jax.checkpoint(loss_and_state, policy=policy)
    grad = jax.value_and_grad(loss_and_state, has_aux=True)

    def step(state: Any, x: Any, y: Any) -> Any:
        tv, ntv, ov = state
        (_, (loss, ntv)), grads = grad(tv, ntv, ov, x, y)
        tv, ov = optimizer.stateless_apply(ov, grads, tv)
        return (tv, ntv, ov), loss

    def value(v: Any) -> Any:
        if abstract:
            return jax.ShapeDtypeStruct(tuple(v.shape), jax.dtypes.canonicalize_dtype(v.dtype))
        return v.value

    state = tuple(
        [value(v) for v in group]
        for group in (model.trainable_variables, model.non_trainable_variables, optimizer.variables)
    )
    if not jit:
        return step, state
    if replicas is None:
        return jax.jit(step, donate_argnums=0), state
    whole, split = replicas.replicated(), replicas.split()
    jitted = jax.jit(
        step, donate_argnums=0, in_shardings=(whole, split, split), out_shardings=(whole, whole)
    )
    return jitted, replicas.place(jax, state, whole=True)
