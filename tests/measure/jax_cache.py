"""JAX's own persistent compilation cache, shared by the JAX processes of one test module."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def jax_compiled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jax-compilation-cache")


@pytest.fixture(autouse=True)
def jax_compile_once(monkeypatch: pytest.MonkeyPatch, jax_compiled: Path) -> None:
    """The JAX processes of these tests share JAX's own persistent compilation cache, empty at
    the module's start: the doctor builds a fresh model for each trial, and XLA compiled the
    same step and every variable initialiser again (half a second each on 2 CPU cores). A
    cached executable is what XLA compiled for the identical program, so nothing asserted
    changes; warm-up is dropped by a fixed step count wherever these tests time steps."""
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(jax_compiled))
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
