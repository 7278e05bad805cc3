"""Predicting training speed on GPUs you don't have. Runs without TensorFlow when the step's
cost profile is cached or shipped; computing a new profile needs it. Every command predicts
through one :class:`Session`, made by ``gpuscout.predict.session.session(catalog, store)``: the
calibration fitted once to published rows, your stored GPU runs of the step as anchors."""

from gpuscout.predict.predictor import Prediction
from gpuscout.predict.session import Session

__all__ = ["Prediction", "Session"]
