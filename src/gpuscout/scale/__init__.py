"""Scale-out: data-parallel plans checked without TensorFlow (``distribute``), N workers on
one machine as N machines would start them (``launch``), and scaling sweeps (``sweep``).
"""

from __future__ import annotations

from gpuscout.core.lazy import lazy_getattr

_EXPORTS = {
    "launch": "gpuscout.scale.launch",
    "scaling_sweep": "gpuscout.scale.sweep",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
