"""What a built-in workload is: the ``Workload`` record every entry of the registry fills in.

Its own module so that the families of entries (``workloads/__init__.py``, ``workloads/llm.py``)
import it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from gpuscout.core.errors import UserError

Dims = Mapping[str, int]


@dataclass(frozen=True)
class Workload:
    """A built-in training workload.

    ``dims`` are the size knobs of the model (with defaults); ``tiny`` overrides them for
    tests, so every workload can be built and trained in seconds on a CPU.
    """

    name: str
    description: str
    epoch_samples: int
    epoch_unit: str
    default_batch_gpu: int
    default_batch_cpu: int
    dims: Dims
    tiny: Dims
    input_shape: Callable[[Dims], tuple[int, ...]]
    input_dtype: str
    label_shape: tuple[int, ...]
    flops_per_sample: Callable[[Dims], float] | None = None
    flops_note: str = ""
    settable: tuple[str, ...] = field(default=())
    # A real input pipeline of its own (tf_data.PIPELINES), used instead of synthetic data.
    has_pipeline: bool = False
    # The job priced when the user names none (scout, report): a training run someone would
    # recognise for this model, in epochs, and where that number comes from (printed with it).
    default_epochs: float = 1.0
    default_epochs_why: str = "one epoch"
    # "classify": one class label per sample, drawn from dims["classes"]; "causal-lm": the
    # next token at every position (labels shaped like the input, drawn from dims["vocab"]).
    task: str = "classify"
    # Upper bounds of settings the model cannot exceed (a learned position table's length),
    # each with the reason printed when a user asks for more.
    max_dims: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    # Settings where 0 means "off" rather than a size (lora_rank 0: full fine-tuning).
    may_be_zero: tuple[str, ...] = ()

    def resolve(self, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
        """Defaults with ``overrides`` applied; unknown or non-positive values are user errors."""
        out = dict(self.dims)
        for key, value in (overrides or {}).items():
            if key not in out:
                raise UserError(
                    f"workload '{self.name}' has no setting '{key}'.",
                    f"use one of: {', '.join(sorted(out))}.",
                )
            if value < 0 or (value == 0 and key not in self.may_be_zero):
                floor = ">= 0" if key in self.may_be_zero else "> 0"
                raise UserError(
                    f"{key} must be {'non-negative' if floor == '>= 0' else 'positive'}, got "
                    f"{value}.",
                    f"pass {key} {floor}.",
                )
            if key in self.max_dims and value > self.max_dims[key][0]:
                limit, why = self.max_dims[key]
                flag = "--" + key.replace("_", "-")
                raise UserError(
                    f"{self.name} takes {key} up to {limit:,} ({why}), got {value:,}.",
                    f"pass {flag} {limit} or less.",
                )
            out[key] = int(value)
        return out

    def labels_shape(self, dims: Dims) -> tuple[int, ...]:
        """One label per sample, or one per position for a causal language model."""
        return (dims["seq_len"],) if self.task == "causal-lm" else self.label_shape

    def training_flops_per_sample(self, dims: Dims) -> float | None:
        return self.flops_per_sample(dims) if self.flops_per_sample else None
