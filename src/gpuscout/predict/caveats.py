"""What a prediction of a step cannot see, said by every command that prints one (issue 42,
"one truth per fact"): ``predict``, ``advise``, ``cost``, ``scout`` and the report all take
these lines from here, through the session, so a caveat never reaches one command only.

- **Loops.** A recurrent layer (Keras' LSTM or GRU) compiles to a while loop whose time steps
  XLA runs kernel by kernel, and that is how the step is counted; without XLA, TensorFlow runs
  each such layer as one fused cuDNN kernel, which can be several times faster. No published
  row validates either, and for a small model it is the largest error of the prediction, so
  GPUs that look tied may not be.
- **Fused attention on old GPUs.** A step traced with cuDNN's fused attention kernel
  (``FUSED_ATTENTION``) runs XLA's unfused attention on a GPU older than Ampere: slower than
  predicted there.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpuscout.catalog import Gpu
from gpuscout.predict.hlo import LOOPS
from gpuscout.predict.profile import FUSED_ATTENTION, Profile

__all__ = ["caveats"]

LOOP_CAVEAT = (
    "recurrent layers: the step has while loops (an LSTM's or GRU's time steps), counted "
    "as XLA runs them, kernel by kernel; without XLA, TensorFlow runs each such layer as one "
    "fused cuDNN kernel, which can be several times faster, and no published row validates "
    "either: options within a few times of each other may not be in this order (measure "
    "yours with gpuscout bench --model)"
)


def caveats(profile: Profile, gpus: Sequence[Gpu] = ()) -> list[str]:
    """The caveats of predicting ``profile``, on ``gpus`` where one depends on the GPU."""
    out = [LOOP_CAVEAT] if LOOPS in profile.method else []
    if FUSED_ATTENTION in profile.method:
        older = [g.id for g in gpus if float(g.compute_capability) < 8.0]
        if older:
            out.append(
                f"{', '.join(older)}: older than Ampere, where Keras runs XLA's unfused "
                "attention rather than cuDNN's fused kernel the step was traced with: "
                "predicted faster than it would run there"
            )
    return out
