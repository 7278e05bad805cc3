"""The PyTorch measuring backend: Keras 3 on PyTorch (``KERAS_BACKEND=torch``), chosen in the
measuring child before Keras is imported (``measure/child.py``). Only this folder imports
torch."""
