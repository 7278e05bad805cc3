"""Measuring training speed. Only this package's ``tf_*`` and ``backend_tf`` modules import
TensorFlow, and only when a measurement starts.

Names are imported lazily: ``gpuscout.measure.workloads`` (the FLOP counts ``audit`` needs)
must not pull in the measuring machinery (SciPy, the store) with it.
"""

from __future__ import annotations

from gpuscout.lazy import lazy_getattr

_EXPORTS = {
    "WORKLOADS": "gpuscout.measure.workloads",
    "Workload": "gpuscout.measure.workloads",
    "bench": "gpuscout.measure.benchmark",
    "diagnose": "gpuscout.measure.doctor",
    "get_workload": "gpuscout.measure.workloads",
    "launch": "gpuscout.measure.launch",
    "scaling_sweep": "gpuscout.measure.sweep",
    "soak": "gpuscout.measure.soak",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
