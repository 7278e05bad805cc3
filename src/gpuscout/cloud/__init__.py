"""Measure a rented GPU before renting it for weeks, through SkyPilot (``gpuscout cloud``).

``plan`` writes one SkyPilot task per candidate GPU with its predicted time, cost and hard
caps; ``launch`` runs them through SkyPilot's Python API (the optional ``gpuscout[cloud]``
extra) and fetches each exported run file; ``collect`` finds those files for ``runs import``;
:func:`time_estimator` hands gpuscout's predicted job time to SkyPilot's optimizer. Nothing
here imports SkyPilot or TensorFlow at import time.
"""

from gpuscout.cloud.estimator import TimeEstimator, time_estimator

__all__ = ["TimeEstimator", "time_estimator"]
