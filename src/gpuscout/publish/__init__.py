"""Sending stored runs to other tools: MLflow here; TensorBoard lives in the measuring backend
(``gpuscout.measure.tf_tensorboard``) because its writer is TensorFlow's."""
