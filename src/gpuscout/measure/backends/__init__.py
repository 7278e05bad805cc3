"""The measuring backends: the only modules of gpuscout that import a framework.

Each backend is a package, ``backends/<name>/`` (``tensorflow``, ``jax``, ``torch``; ``keras``
holds the Keras 3 code they share), imported only once a measurement (or a trace) starts,
through :func:`get` and the one protocol every backend gives (``protocol.py``). This module
imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from gpuscout.measure.backends.protocol import Backend

JAX_INSTALL_FIX = "pip install 'gpuscout[jax]' (on a GPU machine also jax[cuda12] or jax[cuda13])."
TORCH_INSTALL_FIX = "pip install 'gpuscout[torch]'."


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # an import hook that refuses it: as good as not installed
        return False


def require_jax(what: str = "--backend jax") -> None:
    """UserError with the install line when JAX is missing, found without importing it."""
    from gpuscout.core.errors import UserError

    if not _installed("jax"):
        raise UserError(f"{what} needs JAX, which is not installed.", JAX_INSTALL_FIX)


def require_torch(what: str = "--backend torch") -> None:
    """UserError with the install line when PyTorch is missing, found without importing it."""
    from gpuscout.core.errors import UserError

    if not _installed("torch"):
        raise UserError(f"{what} needs PyTorch, which is not installed.", TORCH_INSTALL_FIX)


def refuse_torch(command: str, backend: str) -> None:
    """UserError naming ``command`` when it would predict a Keras model (a built-in workload
    or a Keras ``--model``) on PyTorch: the PyTorch backend captures the step of a plain
    ``torch.nn.Module`` for predict, not of a Keras model gpuscout builds; refused before
    anything is measured (``scout``: its predictions are half of it)."""
    if backend != "torch":
        return
    from gpuscout.core.errors import UserError

    raise UserError(
        f"{command} --backend torch takes a plain PyTorch --model so far: a Keras model's step "
        "(a built-in workload, or your keras.Model) is not traced on PyTorch for predictions.",
        "measure it with gpuscout bench --backend torch (or doctor, soak) and scout it with "
        "--backend tensorflow or jax, or give --model FILE.py:FUNCTION returning a "
        "torch.nn.Module.",
    )


def get(backend: str) -> Backend:
    """The backend named ``backend`` (``tensorflow``, ``jax``, ``torch``), behind the one
    protocol (``protocol.py``): its ``entry`` module, imported now (it imports no framework
    until one of its functions runs). The measuring core, predict and scale reach a backend
    only through here, never by importing its package."""
    import importlib

    from gpuscout.core.errors import UserError
    from gpuscout.core.records import BACKENDS

    if backend not in BACKENDS:
        raise UserError(
            f"backend '{backend}' is not one gpuscout has.", f"use one of {', '.join(BACKENDS)}."
        )
    return cast("Backend", importlib.import_module(f"{__name__}.{backend}.entry"))


def refuse_torch_workload(command: str, backend: str, workload: str | None) -> None:
    """UserError when ``command`` is asked to trace a built-in workload on PyTorch: the
    PyTorch backend captures a plain PyTorch ``--model`` (``backends/torch/capture.py``); the
    built-in workloads are Keras models, traced by TensorFlow or JAX."""
    if backend != "torch" or workload is None:
        return
    from gpuscout.core.errors import UserError

    raise UserError(
        f"{command} --backend torch captures a plain PyTorch --model; --workload {workload} "
        "is a Keras model gpuscout builds.",
        "predict it with --backend tensorflow or jax, or give --model FILE.py:FUNCTION "
        "returning a torch.nn.Module.",
    )
