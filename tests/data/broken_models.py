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


def _relu_nan_to_zero(x):
    """ReLU as TensorFlow's oneDNN kernel computes it (oneDNN is on by default on CPUs with
    AVX512-VNNI, AVX-VNNI, AVX512-BF16 or AMX): max(x, 0) taken as "x > 0 ? x : 0", so a NaN
    comes out 0. Written out here so that every CPU and both backends behave so
    (TF_ENABLE_ONEDNN_OPTS=1 on TensorFlow 2.21 showed it)."""
    return keras.ops.where(keras.ops.isnan(x), 0.0, keras.ops.relu(x))


def nan_hidden_from_the_loss():
    """A NaN in a first-layer weight, hidden from the loss by a ReLU that turns NaN into 0: the
    loss stays finite at every step, the weights are broken from the start."""
    model = keras.Sequential(
        [
            keras.Input((12,)),
            keras.layers.Dense(8),
            keras.layers.Lambda(_relu_nan_to_zero),
            keras.layers.Dense(1),
        ]
    )
    kernel, bias = model.layers[0].get_weights()
    kernel[0, 0] = float("nan")
    model.layers[0].set_weights([kernel, bias])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    return model
