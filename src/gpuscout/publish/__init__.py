"""Sending stored runs to other tools: TensorBoard and MLflow, from one set of timestamped
series (``series``)."""
