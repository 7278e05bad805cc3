"""Model builders that never return a model, importing no framework.

What a test of them checks (a crash or a hang stored as such) is the runner's, the same for
every backend, so it may run them on the cheaper measuring child: ``--backend jax`` starts
Keras on JAX (about 4 CPU-s here) where TensorFlow costs about 7, and ``user_models.py``
imports TensorFlow whatever the backend.
"""


def crashes_the_process() -> None:
    """A hard crash, as a segfault in a kernel or the kernel's OOM killer would cause."""
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


def hangs() -> None:
    """Never returns, as a builder stuck on a wedged device or a lock would not."""
    import time

    time.sleep(3600)
