"""Diagnosis: where a training loop's time goes (``doctor``) and whether it stays fast and
correct for a long run (``soak``). The records, the analysis and the two entries live here,
free of TensorFlow; the trials themselves run in ``measure/backends/tensorflow``.
"""

from __future__ import annotations

from gpuscout.core.lazy import lazy_getattr

_EXPORTS = {
    "diagnose": "gpuscout.diagnose.doctor",
    "soak": "gpuscout.diagnose.soak",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
