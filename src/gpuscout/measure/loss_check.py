"""Is the training that was timed a training at all? One check for ``bench`` and ``soak``.

A model whose loss is NaN from the first step, or one that diverges (a learning rate of 1e6),
runs at an honest speed, and ``bench`` used to store it as "ok" (issue 31). The rule, stated
once for both commands:

* a loss that is NaN or +-inf at any step is a broken training, from that step on;
* a loss that grows by orders of magnitude is a diverged one: the last step's loss more than
  GROWTH_LIMIT times the first finite one (compared in magnitude, the first taken as at least
  GROWTH_FLOOR, so a loss near zero rising to 0.5 is not called divergence).

Every step counts, warm-up included: the warm-up trains the same model. The loss is the value
each step's synchronisation already fetched to the host; reading it costs no extra sync.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

GROWTH_LIMIT = 1e3
GROWTH_FLOOR = 1e-3
# The status of a run whose timing stands but whose training broke (see records.Status):
# stored, shown, and left out of calibration like any run that is not "ok".
DIVERGED: Final = "diverged"


def finite(loss: float) -> bool:
    """Whether a step's loss is a number a training can go on from (not NaN, not +-inf)."""
    return math.isfinite(loss)


def nonfinite_text(value: float | None, step: int | None) -> str:
    """How a NaN/Inf loss is told, by ``bench`` and ``soak`` alike (``value`` None: which of
    the two is not known)."""
    name = "NaN/Inf" if value is None else "NaN" if math.isnan(value) else "Inf"
    return f"the loss became {name} at step {step}" if step else f"the loss became {name}"


def weights_text(bad: int, total: int) -> str:
    """How a training whose loss stayed finite but whose weights did not is told (``bench``,
    ``soak`` and the Keras callback alike; ``backends/keras/weights.py`` says how it happens)."""
    return (
        f"the loss stayed finite, but {bad} of {total} weight tensors hold NaN/Inf at the end "
        "(a NaN can vanish before the loss: TensorFlow's oneDNN ReLU, for one, turns it into "
        "0): the training is broken, so its speed is not a benchmark. Check the data (NaN in "
        "inputs or labels) and the learning rate."
    )


@dataclass
class LossWatch:
    """The losses of a run's steps, as they come; :meth:`verdict` says if the training broke.

    Keeps three numbers, not the series: a long run's memory stays flat.
    """

    steps: int = 0
    first: float | None = None  # the first finite loss
    first_step: int = 0
    last: float | None = None
    bad: float | None = None  # the first NaN/Inf loss, and its step (1 = the first step)
    bad_step: int | None = None
    grown_step: int | None = None  # the first step past GROWTH_LIMIT x the first loss

    def add(self, loss: float, steps: int = 1) -> None:
        """One step's loss (a float, or anything ``float()`` takes: a NumPy or JAX scalar).

        ``steps``: the steps the loss comes after, where a loop reports one loss for several
        (a Keras execution of ``steps_per_execution`` steps): it is counted at the last.
        """
        value = float(loss)
        self.steps += max(1, steps)
        self.last = value
        if not finite(value):
            if self.bad_step is None:
                self.bad, self.bad_step = value, self.steps
            return
        if self.first is None:
            self.first, self.first_step = value, self.steps
        elif self.grown_step is None and self._grown(value):
            self.grown_step = self.steps

    def _grown(self, value: float) -> bool:
        assert self.first is not None
        return abs(value) > GROWTH_LIMIT * max(abs(self.first), GROWTH_FLOOR)

    def verdict(self) -> str | None:
        """Why the training is broken, naming the step; None if it is not (or no loss came)."""
        if self.bad is not None:
            grew = (
                f"the loss grew more than {GROWTH_LIMIT:g} x from step {self.grown_step} on, then "
                if self.grown_step is not None
                else ""
            )
            return (
                f"{grew}{nonfinite_text(self.bad, self.bad_step)} (of {self.steps} steps, warm-up "
                "included): the training is broken, so its speed is not a benchmark. Check the "
                "learning rate, the data (NaN in inputs or labels) and the loss."
            )
        if self.first is None or self.last is None or not self._grown(self.last):
            return None
        return (
            f"the training diverged: the loss grew from {self.first:.4g} at step "
            f"{self.first_step} to {self.last:.4g} at step {self.steps} (more than "
            f"{GROWTH_LIMIT:g} x from step {self.grown_step} on): its speed is not a benchmark. "
            "Lower the learning rate."
        )
