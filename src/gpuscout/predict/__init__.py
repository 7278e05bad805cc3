"""Predicting training speed on GPUs you don't have. Runs without TensorFlow when the step's
cost profile is cached or shipped; computing a new profile needs it."""

from gpuscout.predict.predictor import Anchor, Prediction, anchor_from_run, predict

__all__ = ["Anchor", "Prediction", "anchor_from_run", "predict"]
