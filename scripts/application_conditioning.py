#!/usr/bin/env python
"""Is a keras.applications test model well conditioned? Keras's float32 logits against its float64
ones (JAX with x64, the same weights), on the models tests/test_applications.py builds.

    KERAS_BACKEND=jax python scripts/application_conditioning.py                 # all 40
    KERAS_BACKEND=jax python scripts/application_conditioning.py ResNet152 --kerasgl

A test model on which Keras's own float32 misses its float64 answer by about the tolerance tests
float32 rounding, not kerasgl: no float32 implementation summing in another order could then be
held to 1e-4 of Keras. For each model this prints the largest |logit|, the largest |float32 -
float64| and its share of the tests' tolerance (1e-4 + 1e-4 * |logit|; over 1 fails), and with
--kerasgl the same for kerasgl's float32 (the .keras file) and kerasgl against Keras float32.

Memory: on a 23 GB machine the process was killed for memory on EfficientNetB7 (the float32
and float64 models of JAX with x64 together); run the others by name, one process each.
"""
import argparse
import gc
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), os.path.join(ROOT, "scripts"), ROOT]

import jax  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)

import test_applications as apps  # noqa: E402
from bench_recipes import cpu_model  # noqa: E402
from keras_ref import ATOL, RTOL, keras  # noqa: E402


def share(actual, expected):
    return float(np.max(np.abs(actual - expected) / (ATOL + RTOL * np.abs(expected))))


def set_precision(dtype):
    keras.config.set_floatx(dtype)
    keras.config.set_dtype_policy(dtype)


def measure(name, with_kerasgl):
    size = apps.APPLICATIONS[name]
    set_precision("float32")
    model = apps.build(name, size)
    x = apps.inputs(name, size)
    y32 = model.predict(x, verbose=0)
    weights = model.get_weights()
    y_gl = None
    if with_kerasgl:
        import kerasgl as kg
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"{name}.keras")
            model.save(path)
            with kg.load_model(path) as loaded:
                y_gl = loaded.predict(x, verbose=0)
    del model
    set_precision("float64")
    try:
        model64 = getattr(keras.applications, name)(
            weights=None, input_shape=(size, size, 3), classes=apps.CLASSES,
            classifier_activation=None)
        model64.set_weights([w.astype("float64") for w in weights])
        y64 = np.asarray(model64.predict(x.astype("float64"), verbose=0))
    finally:
        set_precision("float32")
    line = (f"{name:18s} max|logit| {np.abs(y64).max():6.3g}   Keras f32-f64 "
            f"{np.abs(y32 - y64).max():9.3g} ({share(y32, y64):4.2f})")
    if y_gl is not None:
        line += (f"   kerasgl-f64 {np.abs(y_gl - y64).max():9.3g} ({share(y_gl, y64):4.2f})"
                 f"   kerasgl-Keras f32 {np.abs(y_gl - y32).max():9.3g} ({share(y_gl, y32):4.2f})")
    return line


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="applications (default: all 40)")
    parser.add_argument("--kerasgl", action="store_true",
                        help="also run kerasgl on each (.keras) and compare")
    args = parser.parse_args()
    names = args.names or list(apps.APPLICATIONS)
    print(f"# {cpu_model()}, {os.cpu_count()} CPUs; "
          f"keras {keras.__version__}, jax {jax.__version__}, numpy {np.__version__}")
    print("# (share of the tolerance 1e-4 + 1e-4*|logit| in brackets: over 1 fails)")
    for name in names:
        start = time.perf_counter()
        print(f"{measure(name, args.kerasgl)}   {time.perf_counter() - start:5.0f} s", flush=True)
        # Each model's compiled XLA programs and variables stay referenced otherwise: all 40 in
        # one process grew past 24 GB by EfficientNetB7.
        keras.backend.clear_session()
        gc.collect()


if __name__ == "__main__":
    main()
