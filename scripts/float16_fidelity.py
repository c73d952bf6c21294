#!/usr/bin/env python
"""How far kg.load_model(path, storage_dtype="float16") moves a model's outputs from Keras's
float32 ones, and how much weight memory it saves: the table of docs/float16.md.

    KERAS_BACKEND=jax python scripts/float16_fidelity.py                    # the default models
    KERAS_BACKEND=jax python scripts/float16_fidelity.py ResNet50 VGG16 --size 128

Application models are tests/test_applications.py's test models (weights=None, Keras's
initialisers, random seed 0, random normalisation parameters, BatchNormalization statistics taken
from a calibration batch of random images and moved at random, logits scaled to unit RMS: a
well-conditioned network whose statistics look like a trained one's), at --size pixels, with a
calibration batch of --calibration images; `digits` is kerasgl's demo CNN, trained in Keras on
scikit-learn's digits (kerasgl/_data), on its 24 real samples: real trained weights.

For each model, on --batch random images (the digits' own samples for `digits`):
  params             the file's weights (Keras's count_params)
  weights f32 / f16  the weights on the GPU as uploaded (model.gpu_bytes right after load,
                     before any plan): storage_dtype "float32" and "float16"; ratio f16 / f32
  max abs y          the largest |logit| of Keras float32
  f32 diff           max |kerasgl float32 - Keras float32| (the baseline: float32 rounding only)
  f16 diff           max |kerasgl float16 - Keras float32|
  f16 rel            f16 diff / max abs y (relative to the logits' scale)
  top-1              samples whose arg-max agrees between kerasgl float16 and Keras float32
  ms f32 / f16       with --time CALLS: the median planned predict of one image, in ms
The machine's facts and its load average open the output (timings are not the point here).
"""
import argparse
import gc
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("KERASGL_COMPILE_AHEAD", "0")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "tests"), ROOT]

import numpy as np  # noqa: E402

import test_applications as apps  # noqa: E402
from keras_ref import keras  # noqa: E402

import kerasgl as kg  # noqa: E402

import bench_recipes  # noqa: E402  (scripts/, beside this file)

DEFAULT_MODELS = ("MobileNetV2", "ResNet50", "EfficientNetB0", "DenseNet121", "InceptionV3",
                  "VGG16", "digits")




def machine_line() -> str:
    info = kg.info()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (f"# {bench_recipes.cpu_model()}, {os.cpu_count()} CPUs, load average {load}; {info.renderer}, "
            f"OpenGL {info.version}; kerasgl {kg.__version__}, keras {keras.__version__} "
            f"({keras.backend.backend()})")


def build_application(name: str, size: int, calibration: int):
    """tests/test_applications.py's build, at this size, with `calibration` images."""
    keras.utils.set_random_seed(0)
    model = getattr(keras.applications, name)(weights=None, input_shape=(size, size, 3),
                                              classes=apps.CLASSES, classifier_activation=None)
    apps.randomize_non_kernels(model)
    images = apps.inputs(name, size, batch=calibration, seed=2)
    apps.random_batchnorm_statistics(model, images)
    apps.unit_logits(model, images)
    return model


def digits_model():
    """The trained digits CNN with its softmax head made linear (logits, as for the others),
    and its 24 samples."""
    data = np.load(os.path.join(ROOT, "kerasgl", "_data", "digits_samples.npz"))
    trained = keras.saving.load_model(os.path.join(ROOT, "kerasgl", "_data", "digits_cnn.keras"))
    config = trained.get_config()
    for layer in config["layers"]:
        if layer["config"].get("activation") == "softmax":
            layer["config"]["activation"] = "linear"
    model = type(trained).from_config(config)
    model.set_weights(trained.get_weights())
    return model, data["images"]


def predict_ms(full, half, x, calls: int) -> tuple:
    """Median ms of a planned predict of `x` (after warm_up) by each model, their calls
    interleaved so that a change in the machine's load reaches both alike."""
    for model in (full, half):
        model.warm_up(batch_size=len(x))
    times = {id(full): [], id(half): []}
    for _ in range(calls):
        for model in (full, half):
            start = time.perf_counter()
            model.predict(x, verbose=0)
            times[id(model)].append(1e3 * (time.perf_counter() - start))
    return tuple(float(np.median(times[id(m)])) for m in (full, half))


def measure(name: str, size: int, batch: int, calibration: int, timed: int = 0) -> dict:
    if name == "digits":
        model, x = digits_model()
    else:
        model = build_application(name, size, calibration)
        x = apps.inputs(name, size, batch=batch, seed=1)
    expected = np.asarray(model.predict(x, verbose=0), np.float64)
    row = {"model": name if name == "digits" else f"{name} {size}", "params": model.count_params()}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        del model
        gc.collect()
        with kg.load_model(path) as full, kg.load_model(path, storage_dtype="float16") as half:
            for dtype, loaded in (("float32", full), ("float16", half)):
                row[f"bytes {dtype}"] = loaded.gpu_bytes
                row[dtype] = np.asarray(loaded.predict(x, verbose=0), np.float64)
            if timed:
                row["ms"] = predict_ms(full, half, x[:1], timed)
    scale = float(np.abs(expected).max())
    row.update({
        "max|y|": scale,
        "f32 |d|": float(np.abs(row["float32"] - expected).max()),
        "f16 |d|": float(np.abs(row["float16"] - expected).max()),
        "top-1": f"{int((row['float16'].argmax(-1) == expected.argmax(-1)).sum())}/{len(x)}",
    })
    row["f16 rel"] = row["f16 |d|"] / scale
    return row


COLUMNS = ("model", "params", "weights f32", "weights f16", "ratio", "max abs y", "f32 diff",
           "f16 diff", "f16 rel", "top-1")


def human(nbytes: int) -> str:
    return f"{nbytes / 1e6:.1f} MB" if nbytes >= 1e6 else f"{nbytes / 1e3:.1f} kB"


def cells(row: dict) -> list:
    b32, b16 = row["bytes float32"], row["bytes float16"]
    return [row["model"], f"{row['params']:,}", human(b32), human(b16), f"{b16 / b32:.3f}",
            f"{row['max|y|']:.3g}", f"{row['f32 |d|']:.2e}", f"{row['f16 |d|']:.2e}",
            f"{row['f16 rel']:.2e}", row["top-1"]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*", default=DEFAULT_MODELS,
                        help="keras.applications names, or 'digits' "
                             f"(default: {' '.join(DEFAULT_MODELS)})")
    parser.add_argument("--size", type=int, default=96, help="input pixels (default 96)")
    parser.add_argument("--batch", type=int, default=8, help="images compared (default 8)")
    parser.add_argument("--calibration", type=int, default=32,
                        help="images the BatchNormalization statistics come from (default 32)")
    parser.add_argument("--time", type=int, default=0, metavar="CALLS",
                        help="also time CALLS planned predicts of one image per storage dtype "
                             "(interleaved; median ms): noisy on a busy machine")
    args = parser.parse_args(argv)
    print(machine_line())
    columns = COLUMNS + (("ms f32", "ms f16") if args.time else ())
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    worst = 0.0
    for name in args.models:
        row = measure(name, args.size, args.batch, args.calibration, args.time)
        worst = max(worst, row["f16 rel"])
        extra = [f"{ms:.1f}" for ms in row["ms"]] if args.time else []
        print("| " + " | ".join(cells(row) + extra) + " |", flush=True)
        keras.backend.clear_session()
        gc.collect()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# largest f16 diff relative to max abs y: {worst:.2e}; load average {load} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
