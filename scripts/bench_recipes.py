"""What the benchmark scripts share, so that their figures describe the same things: the CPU they
ran on, and the recipe of the benchmark models (scripts/bench.py builds them in Keras 3,
scripts/bench_onnxruntime.py in tf-keras for ONNX Runtime). Imports nothing of kerasgl: the ONNX
Runtime environment has none."""
from __future__ import annotations

import platform

import numpy as np


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def build_model(keras, name: str, size: int):
    """The benchmark model `name` ("small_cnn" or a keras.applications class) with `keras` (the
    keras or tf_keras module): seed 0, random BatchNormalization statistics, so that a wrong
    BatchNormalization shows in the error column."""
    keras.utils.set_random_seed(0)
    if name == "small_cnn":
        model = keras.Sequential([
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(64, 3, activation="relu"), keras.layers.MaxPooling2D(),
            keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, activation="softmax")], name="small_cnn")
    else:
        model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                                  classifier_activation=None)
    rng = np.random.default_rng(0)
    ranges = {"gamma": (0.5, 1.5), "beta": (-0.2, 0.2), "moving_mean": (-0.2, 0.2),
              "moving_variance": (0.5, 1.5)}
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            for var in layer.weights:
                # Keras 3 names a variable "gamma", tf-keras ".../gamma:0".
                low, high = ranges[var.name.rsplit("/", 1)[-1].split(":")[0]]
                var.assign(rng.uniform(low, high, size=var.shape).astype("float32"))
    return model
