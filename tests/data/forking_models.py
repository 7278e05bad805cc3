"""Model builders that leave processes and threads behind, as data-loader workers do.

Each writes ``PGID PID...`` (its process group, then the processes it started) to the file
named by ``GPUSCOUT_TEST_PIDS`` when that is set, so a test can check that none of them
outlived the command. Each sleeps for ever: only gpuscout can end them.
"""

import multiprocessing
import os
import threading
import time

import keras


def compiled_regressor():
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model


def _sleep_for_ever() -> None:
    while True:
        time.sleep(3600)


def _tell(*pids: int) -> None:
    path = os.environ.get("GPUSCOUT_TEST_PIDS")
    if path:
        with open(path, "w") as f:
            f.write(" ".join(str(p) for p in (os.getpgid(0), *pids)))


def forks_a_sleeper():
    """``os.fork()`` a child that sleeps for ever and holds every inherited descriptor open
    (the measuring child's pipe to gpuscout included)."""
    _tell(_fork_a_sleeper())
    return compiled_regressor()


def starts_a_worker():
    """A non-daemon thread and a non-daemon ``multiprocessing`` worker: the interpreter waits
    for both at exit, so the measuring child itself never ends."""
    threading.Thread(target=_sleep_for_ever, name="loader", daemon=False).start()
    worker = multiprocessing.get_context("fork").Process(target=_sleep_for_ever, daemon=False)
    worker.start()
    _tell(worker.pid or 0)
    return compiled_regressor()


def _fork_a_sleeper() -> int:
    pid = os.fork()
    if pid == 0:
        try:
            _sleep_for_ever()
        finally:
            os._exit(0)
    return pid


def forks_then_fails():
    """Forks a worker, then fails while building: a refusal, with the worker still running."""
    _tell(_fork_a_sleeper())
    raise ValueError("width must be positive, got -1")


def forks_then_hangs():
    """Forks a worker, then never returns: killed as hung, worker included."""
    _tell(_fork_a_sleeper())
    _sleep_for_ever()
