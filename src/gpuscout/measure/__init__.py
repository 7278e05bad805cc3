"""Measuring training speed: the backend-neutral core.

The protocol (warm-up, stopping rule), statistics, the result record, the child process that
runs a measurement and the parent that watches it, the device monitor (NVML, psutil), the
environment fingerprint, peaks, latency statistics and the batch search live here, free of
any framework. Only ``measure/backends/<name>/`` imports TensorFlow or Keras, and only once a
measurement starts (a test walks every module of the package and enforces this).

Names are imported lazily, so importing this package pulls in nothing heavy.
"""

from __future__ import annotations

from gpuscout.core.lazy import lazy_getattr

_EXPORTS = {
    "bench": "gpuscout.measure.benchmark",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
