"""Advice: the articles' quick checklist (gpuscout.core.articles), memory fit, and a full ranked
recommendation.
Pure functions over the catalog, the predictor and the price model; no TensorFlow unless a
profile must be traced."""

from gpuscout.advise.checklist import QUESTIONS, quick
from gpuscout.advise.memory import Transformer, memory_fit, transformer_bytes
from gpuscout.advise.recommend import PRESETS, Request, advise

__all__ = [
    "PRESETS",
    "QUESTIONS",
    "Request",
    "Transformer",
    "advise",
    "memory_fit",
    "quick",
    "transformer_bytes",
]
