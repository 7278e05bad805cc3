"""What would make a decoder LLM's step fit a GPU it does not fit, from its traced profile.

A row that says "fits memory: no" leaves the user asking what would. For a transformer
(a profile with ``layers``, ``seq_len`` and ``hidden``) each standard way is estimated from the
traced step's own parts (frozen weights, trained weights with their gradients and optimizer
state, activations kept for the backward pass):

- gradient checkpointing: each layer keeps only its input, 2·s·b·h bytes in 16 bits (4 in
  float32), and one layer's activations exist at a time while it is recomputed (Korthikanti
  et al., "Reducing Activation Recomputation in Large Transformer Models", 2022);
- QLoRA (a LoRA step only): the frozen base in 4 bits, 0.5 bytes a weight plus ~6 % for the
  quantization constants (Dettmers et al. 2023: NF4 with double-quantized constants);
- sharding the weights, gradients and optimizer state over N GPUs (FSDP / ZeRO-3): those
  divided by N, activations per GPU.

Estimates, not traces: the output says so. The first option that fits in each family is shown.
"""

from __future__ import annotations

from gpuscout.predict.profile import QLORA_BYTES_PER_WEIGHT, Profile

SHARD_COUNTS = (2, 4, 8, 16, 32, 64)


def _element_bytes(profile: Profile) -> int:
    return 4 if profile.precision == "fp32" else 2


def checkpointed_activations(profile: Profile) -> float | None:
    """Activations kept with every layer recomputed: the layers' inputs plus one layer's own
    activations; None for a profile that is not a transformer's."""
    d = profile.dims
    if not {"layers", "seq_len", "hidden"} <= d.keys():
        return None
    if d.get("checkpointing"):  # traced checkpointed: what it keeps, and one block recomputed
        from gpuscout.predict.predictor import memory_parts

        return memory_parts(profile)["activations"]
    inputs = d["layers"] * d["seq_len"] * d["hidden"] * profile.batch * _element_bytes(profile)
    return inputs + profile.saved_activation_bytes / d["layers"]


def fit_options(profile: Profile, usable_bytes: float) -> list[tuple[str, float]]:
    """(what, bytes needed) for each way that makes the step fit ``usable_bytes``, cheapest
    change first; [] when none does or the profile is not a transformer's training step."""
    ckpt = checkpointed_activations(profile)
    if ckpt is None or profile.kind != "train":
        return []
    frozen, act = float(profile.frozen_bytes), profile.saved_activation_bytes
    trained = 2.0 * profile.param_bytes + profile.optimizer_state_bytes
    checkpointed = bool(profile.dims.get("checkpointing"))
    if checkpointed:  # the traced step already recomputes: its activations are ``ckpt``
        act = ckpt
    ways = [] if checkpointed else [("gradient checkpointing", frozen, trained, ckpt)]
    if frozen and profile.dims.get("lora_rank"):
        four_bit = frozen / _element_bytes(profile) * QLORA_BYTES_PER_WEIGHT
        ways.append(("QLoRA (a 4-bit base)", four_bit, trained, act))
        if not checkpointed:
            ways.append(("QLoRA and gradient checkpointing", four_bit, trained, ckpt))
    found = [(what, f + t + a) for what, f, t, a in ways if f + t + a <= usable_bytes]
    labels = [("", act)] if checkpointed else [("", act), (" and gradient checkpointing", ckpt)]
    for label, a in labels:
        for n in SHARD_COUNTS:
            need = (frozen + trained) / n + a
            if need <= usable_bytes:
                found.append((f"{n} GPUs, weights and optimizer state sharded (FSDP){label}", need))
                break
    return found
