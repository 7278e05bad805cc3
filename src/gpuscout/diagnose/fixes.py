"""What doctor's fixes are called and the code that applies each, per backend.

The same seven fixes on every backend, each written as a user of that framework writes it:
tf.data's ``prefetch``/``map``/``cache`` on TensorFlow, a thread pool and
``jax.device_put`` ahead of the step on JAX (which has no input pipeline of its own), a
``DataLoader``'s workers on PyTorch. The compiled step is ``tf.function`` on TensorFlow and
``jax.jit`` on JAX; JAX compiles every jitted step with XLA, so XLA is no fix there. On PyTorch
the baseline is the eager step (as bench's, and Keras' torch trainer by default), XLA is not
its compiler, and ``torch.compile`` of a Keras model is not measured yet: both are reported as
not tried, with why. Chosen without any framework: ``--skip`` is checked against these names
before anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MIXED = {
    "mixed_float16": 'keras.mixed_precision.set_global_policy("mixed_float16")  # before '
    'building the model; output layer dtype="float32"; model.compile adds loss scaling',
    "mixed_bfloat16": 'keras.mixed_precision.set_global_policy("mixed_bfloat16")  # before '
    'building the model; output layer dtype="float32"; no loss scaling needed',
}


@dataclass(frozen=True)
class FixSet:
    """One backend's fixes: their names (``--skip`` takes them), code, and what to say."""

    backend: str
    compiled: str  # the fix that is the compiled step: measured by turning it off
    code: dict[str, str]
    gil_note: str  # why a parallel map of Python preprocessing did not help
    step_words: str  # how the baseline's step runs, for the method notes
    batch_code: str  # with {batch} and {bound}
    xla_always: str | None = None  # why XLA is not tried: the baseline always has it
    not_tried: dict[str, str] = field(default_factory=dict)  # fix name: why it is not measured
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        names = ("prefetch", "parallel map", "cache", "mixed precision", "XLA", self.compiled)
        object.__setattr__(self, "names", (*names, "batch size"))


TENSORFLOW = FixSet(
    backend="tensorflow",
    compiled="tf.function",
    code={
        "prefetch": "dataset = dataset.prefetch(tf.data.AUTOTUNE)  # the pipeline's last step",
        "parallel map": "dataset = dataset.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE, "
        "deterministic=False)",
        "cache": "dataset = dataset.cache()  # after deterministic preprocessing, before shuffle "
        "and random augmentation",
        **MIXED,
        "XLA": "model.compile(..., jit_compile=True)  # or @tf.function(jit_compile=True) on "
        "your train step",
        "tf.function": "@tf.function  # model.fit does this for you\ndef train_step(x, y): ...",
    },
    gil_note="did not help: if the map calls Python (tf.numpy_function, tf.py_function), "
    "parallel calls queue on Python's GIL; express the preprocessing in TensorFlow ops instead",
    step_words="step as a tf.function",
    batch_code="dataset = dataset.batch({batch})  # the largest that fits ({bound}); scale the "
    "learning rate with it and re-check accuracy",
)

JAX = FixSet(
    backend="jax",
    compiled="jax.jit",
    code={
        "prefetch": "batches = prefetch_to_device(batches, size=2)  # flax.jax_utils; or a "
        "thread that jax.device_put()s the next batches while the step runs",
        "parallel map": "with ThreadPoolExecutor() as pool:  # or Grain's "
        "ReadOptions(num_threads=...), a PyDataset's workers\n"
        "    x = np.stack(list(pool.map(preprocess, raw_samples)))",
        "cache": "samples = np.stack([preprocess(s) for s in raw])  # once, before the epochs "
        "(deterministic preprocessing only); shuffle indices each epoch",
        **MIXED,
        "jax.jit": "train_step = jax.jit(train_step, donate_argnums=0)  # model.fit does this "
        "for you",
    },
    gil_note="did not help: Python code in the preprocessing holds the GIL, so threads queue "
    "on it (NumPy releases it only inside its array operations); vectorise the preprocessing "
    "over the batch, or use processes (Grain's mp_prefetch, PyDataset(use_multiprocessing=True))",
    step_words="step jitted (jax.jit, XLA) with its state donated",
    batch_code="batch_size = {batch}  # in your data loader: the largest that fits ({bound}); "
    "scale the learning rate with it and re-check accuracy",
    xla_always="JAX compiles every jitted step with XLA: the baseline already does",
)

TORCH = FixSet(
    backend="torch",
    compiled="torch.compile",
    code={
        "prefetch": "loader = DataLoader(dataset, batch_size=..., num_workers=2, "
        "prefetch_factor=2, pin_memory=True)  # batches made ahead while the step runs; then "
        "x.to(device, non_blocking=True)",
        "parallel map": "loader = DataLoader(dataset, batch_size=..., num_workers=os.cpu_count())"
        "  # each sample's __getitem__ (its preprocessing) in worker processes",
        "cache": "samples = [preprocess(s) for s in raw]  # once, before the epochs "
        "(deterministic preprocessing only); DataLoader(samples, shuffle=True) reshuffles "
        "them each epoch",
        **MIXED,
        "torch.compile": "model.compile(..., jit_compile=True)  # Keras on PyTorch: the train "
        "step through torch.compile",
    },
    gil_note="did not help here: gpuscout maps in threads, and Python code in the "
    "preprocessing holds the GIL, so threads queue on it; DataLoader(num_workers=N) runs it "
    "in processes, which do not queue: try that, or vectorise the preprocessing over the batch",
    step_words="step run eagerly (Keras 3 on PyTorch: forward, loss.backward(), the "
    "optimizer's apply, as bench --backend torch)",
    batch_code="loader = DataLoader(dataset, batch_size={batch})  # the largest that fits "
    "({bound}); scale the learning rate with it and re-check accuracy",
    not_tried={
        "XLA": "XLA is not PyTorch's compiler (torch.compile is)",
        "torch.compile": "not measured yet: the baseline runs the step eagerly, as Keras' torch "
        "trainer does by default; gpuscout does not time a Keras model's step under "
        "torch.compile (model.compile(jit_compile=True)) yet",
    },
)

FIX_SETS = {"tensorflow": TENSORFLOW, "jax": JAX, "torch": TORCH}
