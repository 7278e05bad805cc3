"""Models whose training is broken, though they run at an honest speed (issue 31)."""

import keras


def nan_from_the_first_step():
    """Every prediction is NaN, so the loss is NaN from the first step on."""
    model = keras.Sequential(
        [
            keras.Input((12,)),
            keras.layers.Dense(8),
            keras.layers.Lambda(lambda x: x * float("nan")),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model


def diverges():
    """Plain SGD at a learning rate of 1e6: the loss explodes within a few steps."""
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(1e6), loss="mse")
    return model
