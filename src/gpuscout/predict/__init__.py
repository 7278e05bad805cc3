"""Predicting training speed on GPUs you don't have. Runs without TensorFlow when the step's
cost profile is cached or shipped; computing a new profile needs it. Every command predicts
through one :class:`Session`, made by ``gpuscout.predict.session.session(catalog, store)``: the
calibration built once, your stored GPU runs in it."""

from gpuscout.predict.predictor import Anchor, Prediction, anchor_from_run, predict
from gpuscout.predict.session import Session

__all__ = ["Anchor", "Prediction", "Session", "anchor_from_run", "predict"]
