"""argparse with one-line errors and value types that explain themselves."""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Any, NoReturn

from gpuscout.core import limits
from gpuscout.core.errors import UserError
from gpuscout.core.limits import MAX_DEVICES
from gpuscout.core.ranges import FloatRange, IntRange, NotWhole, Range, float_in, int_in, whole
from gpuscout.core.ranges import finite as _finite


class OneLineParser(argparse.ArgumentParser):
    """Bad arguments print one line naming the problem and where help is, exit code 2."""

    def error(self, message: str) -> NoReturn:
        # A type's message may end in a full stop of its own: one period, not "..".
        print(
            f"{self.prog}: error: {message.rstrip('.')}. To fix: see '{self.prog} --help'.",
            file=sys.stderr,
        )
        sys.exit(2)


class IntListRange(Range):
    """'1,8,32' -> [1, 8, 32]: at least one whole number, each in ``item``'s range; repeats
    dropped, order kept; with ``most``, at most that many different ones (each is a prediction
    or a measurement of its own, so a list of thousands is a job nobody meant)."""

    def __init__(
        self, item: IntRange, example: str, what: str = "numbers", most: int | None = None
    ) -> None:
        self.item, self.example, self.what, self.most = item, example, what, most
        self.__name__ = f"list of whole numbers {self.bounds()}"

    def bounds(self) -> str:
        return self.item.bounds()

    def __call__(self, text: str) -> list[int]:
        items = list(dict.fromkeys(t.strip() for t in text.split(",") if t.strip()))
        if not items:
            raise argparse.ArgumentTypeError(
                f"'{text}' names no {self.what}; give e.g. {self.example}"
            )
        if self.most is not None and len(items) > self.most:  # before converting any
            raise argparse.ArgumentTypeError(
                f"{len(items)} different {self.what} given; at most {self.most}: give the "
                f"ones you would choose between, e.g. {self.example}"
            )
        values = []
        for t in items:
            try:
                values.append(self.item(t))
            except argparse.ArgumentTypeError as exc:
                shown = text if len(text) <= 60 else f"{text[:57]}..."
                where = f" (in '{shown}')" if len(items) > 1 else ""
                raise argparse.ArgumentTypeError(f"{exc}{where}") from None
        return list(dict.fromkeys(values))


class GpuCounts(Range):
    """'1,4,8,2x8' -> [(1, 1), (1, 4), (1, 8), (2, 8)]: (machines, GPUs per machine)."""

    def __init__(self, per_machine: IntRange, machines: IntRange, most: int) -> None:
        self.per_machine, self.machines, self.most = per_machine, machines, most
        self.__name__ = "GPU counts"

    def bounds(self) -> str:
        return f"{self.per_machine.bounds()} GPUs per machine"

    def __call__(self, text: str) -> list[tuple[int, int]]:
        out = []
        items = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
        if len(items) > self.most:
            raise argparse.ArgumentTypeError(
                f"{len(items)} different GPU counts given; at most {self.most}: give the ones "
                "you would choose between, e.g. 1,4,8,2x8"
            )
        for item in items:
            nodes, _, per = item.rpartition("x")
            try:
                machines = whole(nodes, self.machines.low, self.machines.high) if nodes else 1
            except NotWhole as exc:
                if not exc.out_of_range:
                    raise self._not_counts(item) from None
                raise argparse.ArgumentTypeError(
                    f"machines in '{item}' {exc}, got {nodes.strip()}"
                ) from None
            try:
                gpus = whole(per, self.per_machine.low, self.per_machine.high)
            except NotWhole as exc:
                if not exc.out_of_range:
                    raise self._not_counts(item) from None
                too_many = per.strip().lstrip("0") and not per.strip().startswith("-")
                several = " (several machines: MACHINESxGPUS, e.g. 16x8)" if too_many else ""
                raise argparse.ArgumentTypeError(
                    f"GPUs in one machine {exc}, got {per.strip()} in '{item}'{several}"
                ) from None
            out.append((machines, gpus))
        if not out:
            raise argparse.ArgumentTypeError("give at least one GPU count, e.g. 1,4,8")
        return out

    @staticmethod
    def _not_counts(item: str) -> argparse.ArgumentTypeError:
        return argparse.ArgumentTypeError(
            f"'{item}' is not a GPU count (8) or machines x GPUs (2x8)"
        )


class HoursRange(Range):
    """A duration, '48h', '2d', '90m' or a number of hours, as hours in a :class:`FloatRange`."""

    def __init__(self, hours: FloatRange) -> None:
        self.hours = hours
        self.__name__ = "duration"

    def bounds(self) -> str:
        return f"{self.hours.bounds()} hours"

    def __call__(self, text: str) -> float:
        m = re.fullmatch(r"\s*([0-9.]+)\s*([hdm]?)\s*", text.lower())
        if m is None:
            raise argparse.ArgumentTypeError(f"'{text}' is not a duration like 48h, 2d or 90m")
        try:
            value = float(m.group(1)) * {"": 1, "h": 1, "d": 24, "m": 1 / 60}[m.group(2)]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"'{text}' is not a duration like 48h, 2d or 90m"
            ) from None
        if not (math.isfinite(value) and self.hours.contains(value)):
            raise argparse.ArgumentTypeError(f"must be {self.bounds()}, got {text}")
        return value


class CountText(Range):
    """'1,2,4': whole numbers each in ``item``'s range, given back as the text (the command
    parses it itself, with messages of its own for the rest)."""

    def __init__(self, item: IntRange, example: str, most: int | None = None) -> None:
        self.item, self.example, self.most = item, example, most
        self.__name__ = "counts"

    def bounds(self) -> str:
        return self.item.bounds()

    def __call__(self, text: str) -> str:
        IntListRange(self.item, self.example, "counts", self.most)(text)
        return text


class KeyedNumbers(Range):
    """'KEY=VALUE' (or several, comma-separated, with ``several``): each VALUE a number in
    ``value``'s range, given back as the text for the command to parse."""

    def __init__(self, value: FloatRange, example: str, several: bool = False) -> None:
        self.value, self.example, self.several = value, example, several
        self.__name__ = "KEY=VALUE"

    def bounds(self) -> str:
        return self.value.bounds()

    def __call__(self, text: str) -> str:
        items = [t for t in text.split(",") if t.strip()] if self.several else [text]
        for item in items or [text]:
            key, sep, number = item.partition("=")
            if not sep or not key.strip():
                raise argparse.ArgumentTypeError(f"'{item}' is not KEY=VALUE, e.g. {self.example}")
            try:
                self.value(number.strip())
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"the value in '{item}': {exc}") from None
        return text


def cost_option(text: str) -> str:
    """GPU[xCOUNT][@PROVIDER|@owned][=USD_PER_HOUR]: the count and the price, where given, in
    range (the rest is checked by ``gpuscout.price.options.parse_option``)."""
    count = re.search(r"x(\d+)(?=@|=|$)", text.strip().lower())
    if count:
        try:
            OPTION_GPUS(count.group(1))
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"the GPU count in '{text}' {exc}") from None
    _, sep, price = text.rpartition("=")
    if sep and re.fullmatch(r"\s*[\d.]+\s*", price):
        try:
            USD_PER_HOUR(price.strip())
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"the price in '{text}' {exc}") from None
    return text


def devices(text: str) -> str:
    """--devices: a count of devices (in range) or a list of device names."""
    if text.strip().isascii() and text.strip().isdigit():  # a count; names go to the plan
        try:
            DEVICE_COUNT(text.strip())
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"a device count {exc}") from None
    return text


def model_spec(text: str) -> str:
    """A model to load, FILE.py:FUNCTION or FILE.keras: an empty one would silently fall back
    to the built-in workload, so it is refused here, before anything is measured."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the model is empty; give FILE.py:FUNCTION or FILE.keras, or leave --model out"
        )
    return text


def comma_items(texts: list[str], option: str, example: str) -> list[str]:
    """The names of a list option, given as 'a,b', as '--x a --x b' or both, each once and in
    order: every list option takes both forms. An entry naming nothing (' , ') is refused."""
    items: list[str] = []
    for text in texts:
        if not (names := [n.strip() for n in text.split(",") if n.strip()]):
            raise UserError(f"{option} '{text}' names nothing.", f"give e.g. {option} {example}.")
        items += names
    return list(dict.fromkeys(items))


def precision_help(default: str, extra: str = "") -> str:
    """--precision's help in the same words on every command; ``extra``: what it means there."""
    return (
        "number format of the step: fp32 (float32; matmuls on TF32 tensor cores on Ampere and "
        "newer), mixed_float16 (float16 math, float32 weights; tensor cores from Volta on), "
        f"mixed_bfloat16 (bfloat16 math, float32 weights; Ampere on){extra} (default: {default})"
    )


def gpu_names(text: str) -> str:
    """A comma list of GPU names (or 'all'): an empty list would predict nothing at all."""
    if not [n for n in text.split(",") if n.strip()]:
        raise argparse.ArgumentTypeError(
            f"'{text}' names no GPU; give e.g. rtx-4090,h100-sxm, or all"
        )
    return text


# The ranges of every numeric option, in one place. Why each bound:
HOUR, DAY, WEEK = 3600.0, 86400.0, 604800.0
INT32 = 2**31 - 1  # TensorFlow indexes a tensor's dimensions with int32
# Declared in limits.py, as audit's claims check a file's cells against them too:
EPOCH_SAMPLES, SEQ_LEN, CLAIM_GPUS = limits.EPOCH_SAMPLES, limits.SEQ_LEN, limits.CLAIM_GPUS
EPOCH_SECONDS, SAMPLES_PER_SECOND = limits.EPOCH_SECONDS, limits.SAMPLES_PER_SECOND
SOAK_MINUTES = float_in(0.0, WEEK / 60)  # a week: longer soaks are several runs
EPOCHS = float_in(0.0, 1e6)  # a million epochs: past any real training job
SAMPLES = float_in(0.0, 1e15)  # a million epochs of ImageNet-1k is 1.3e12
GPU_HOURS = float_in(0.0, 1e9)  # a billion GPU-hours: 114,000 GPU-years, past any job
BATCH = int_in(1, INT32)  # a batch is a tensor dimension
STEPS = int_in(1, 10**9)  # a billion steps: years at a millisecond a step
WARMUP_STEPS = int_in(0, 10**9)  # 0: no warm-up discarded
SEED = int_in(0, 2**32 - 1)  # what NumPy and TensorFlow take as a seed
TASK_INDEX = int_in(0, 9_999)  # ten thousand workers
WORKERS = int_in(1, 10_000)  # launch checks the machine's own limit with a better message
CONCURRENCY = int_in(1, 4_096)  # a client thread each
RUN_ID = int_in(1, 2**63 - 1)  # SQLite's largest integer
RUN_IDS = IntListRange(RUN_ID, "3,4,7", "run ids")
LIST_MOST = 64  # entries of a list option that each cost a prediction or a measurement
BATCHES = IntListRange(BATCH, "1,8,32", "sizes", LIST_MOST)
CONCURRENCIES = IntListRange(CONCURRENCY, "1,4,16", "counts", LIST_MOST)
TOP = int_in(1, 10_000)  # options to rank
GPU_COUNTS = GpuCounts(
    int_in(1, 72), int_in(1, 100_000), LIST_MOST
)  # 72: an NVL72 rack is one machine
LAYERS = int_in(1, 10_000)
HIDDEN = int_in(1, 10**6)
HEADS = int_in(1, 10_000)
LORA_RANK = int_in(1, 10**6)
SECONDS = float_in(0.0, WEEK)  # a measurement's time budget: a week at most
WORKER_TIMEOUT = float_in(0.0, DAY)  # seconds
SLO_MS = float_in(0.0, HOUR * 1000)  # a latency target of up to an hour
RATE = float_in(0.0, 1e12)  # samples/s to serve
NETWORK_GBIT = float_in(1e-3, 1e5)  # Gb/s per machine: a megabit to 100 Tb/s
MIN_MEMORY_GB = float_in(0.0, 1e4, low_included=True)  # 0: no filter; 10 TB: past any GPU
PARAMS = float_in(0.0, 1e13)  # ten trillion parameters
BUDGET_USD = float_in(0.0, 1e12)
DATA_GB = float_in(0.0, 1e6)  # a petabyte: beyond it nobody copies data into a rented machine
DEADLINE = HoursRange(float_in(0.0, 10 * 365 * 24.0))  # ten years
FRACTION = float_in(0.0, 1.0)  # a share, 0 excluded: (0, 1]
DRIFT = float_in(0.0, 1.0, high_included=False)  # (0, 1): 1 would be a run that stopped
USD_PER_KWH = float_in(0.0, 100.0, low_included=True)  # 0: the power is free to you
YEARS = float_in(0.0, 100.0)
CHECKPOINT_HOURS = float_in(0.0, 1e4, low_included=True)  # 0: every step is checkpointed
RESTART_MINUTES = float_in(0.0, WEEK / 60, low_included=True)
FAILURES_PER_1000_GPU_H = float_in(0.0, 1000.0, low_included=True)  # 1000: one an hour
USD_PER_DAY = float_in(0.0, 1e9, low_included=True)  # 0: waiting costs nothing
USD_PER_HOUR = float_in(0.0, 1e6)  # an option's price per hour, all its GPUs together
OPTION_GPUS = int_in(1, 100_000)  # GPUs in one priced option
DEVICE_COUNT = int_in(1, MAX_DEVICES)  # devices of this machine (GPUs or logical CPU devices)
DEVICE_COUNTS = CountText(DEVICE_COUNT, "1,2,4", LIST_MOST)  # bench --scaling
GPU_COUNT_CHOICES = CountText(OPTION_GPUS, "1,2,4,8", LIST_MOST)  # advise --counts
SPEEDUP = KeyedNumbers(float_in(0.0, 1e4), "a100-40gb=1.78")  # against the reference GPU
SCALING_EFFICIENCY = KeyedNumbers(float_in(0.0, 1.0), "4=0.68")  # of linear
PURCHASE_USD = KeyedNumbers(float_in(0.0, 1e9), "rtx-4090=1599")
MEASURE_PLAN = KeyedNumbers(SECONDS, "resnet50=60,mlp=15", several=True)  # scout --measure


# General-purpose types, bounded only by what SQLite and the counters can hold. A new option
# should take a named range above instead; the option-range test accepts these.
positive_int = int_in(1, 2**63 - 1)
non_negative_int = int_in(0, 2**63 - 1)
positive_ints = IntListRange(int_in(1, 2**63 - 1), "1,8,32", "sizes")


def positive_float(text: str) -> float:
    """A finite number > 0, with no upper bound: for values checked elsewhere, not for options
    (the option-range test refuses an option of this type; give it a named range above)."""
    value = _finite(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


class DefaultBackend(str):
    """``--backend``'s default, "tensorflow", as argparse hands it back when the option is not
    typed: equal to the string, yet told apart from a typed ``--backend tensorflow`` (a plain
    PyTorch ``--model`` runs on PyTorch unless another framework was asked for by name)."""

    __slots__ = ()


def backend_typed(backend: str) -> bool:
    """Whether the user typed ``--backend`` (rather than leaving its default)."""
    return not isinstance(backend, DefaultBackend)


def resolved_backend(backend: str, model: str | None) -> str:
    """``--backend`` as a run of ``--model`` will use it: a plain PyTorch model (its file
    imports torch, not Keras) runs on PyTorch unless another framework was typed (refused in one
    line). Read from the file without running it; resolving twice gives the same answer."""
    from gpuscout.core.errors import UserError
    from gpuscout.measure.user_spec import backend_for_model, parse_model_spec

    try:
        spec = parse_model_spec(model, check=False) if model else None
    except UserError:  # a missing or malformed --model: the command's own checks say so, in
        return backend  # their order (a contradiction of options before the file's absence)
    return backend_for_model(backend, backend_typed(backend), spec)


def add_backend_option(group: Any, what: str) -> None:
    """``--backend tensorflow|jax|torch``, the same on every command that measures."""
    from gpuscout.core.records import BACKENDS

    group.add_argument(
        "--backend",
        choices=BACKENDS,
        default=DefaultBackend("tensorflow"),
        help=f"the framework Keras {what} on: tensorflow (default), jax (pip install "
        "'gpuscout[jax]') or torch (PyTorch, pip install 'gpuscout[torch]'; "
        "a plain PyTorch --model runs on it without this option)",
    )
