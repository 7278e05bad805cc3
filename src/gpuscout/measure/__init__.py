"""Measuring training speed. Only this package's ``tf_*`` and ``backend_tf`` modules import
TensorFlow, and only when a measurement starts."""

from gpuscout.measure.bench import bench
from gpuscout.measure.workloads import WORKLOADS, Workload, get_workload

__all__ = ["WORKLOADS", "Workload", "bench", "get_workload"]
