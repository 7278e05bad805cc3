"""The measuring backends: the only modules of gpuscout that import a framework.

Each backend is a package, ``backends/<name>/`` (``tensorflow``, ``jax``; ``keras`` holds the
Keras 3 code both share), imported only once a measurement (or a trace) starts. This module
imports none of them.
"""

from __future__ import annotations

JAX_INSTALL_FIX = "pip install 'gpuscout[jax]' (on a GPU machine also jax[cuda12] or jax[cuda13])."


def require_jax(what: str = "--backend jax") -> None:
    """UserError with the install line when JAX is missing, found without importing it."""
    import importlib.util

    from gpuscout.core.errors import UserError

    try:
        found = importlib.util.find_spec("jax") is not None
    except ImportError:  # an import hook that refuses it: as good as not installed
        found = False
    if not found:
        raise UserError(f"{what} needs JAX, which is not installed.", JAX_INSTALL_FIX)
