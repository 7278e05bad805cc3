"""Rendering plain records for people. Never measures, never imports TensorFlow."""
