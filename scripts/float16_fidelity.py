#!/usr/bin/env python
"""How far kg.load_model(path, storage_dtype="float16") moves a model's outputs from Keras's
float32 ones, and how much weight memory it saves: the table of docs/float16.md. With
--activations, the same for activation_dtype="float16" (alone, and with float16 weights too)
and the activations' memory it saves.

    KERAS_BACKEND=jax python scripts/float16_fidelity.py                    # the default models
    KERAS_BACKEND=jax python scripts/float16_fidelity.py ResNet50 VGG16 --size 128
    KERAS_BACKEND=jax python scripts/float16_fidelity.py --activations      # float16 activations

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

With --activations, instead (the same models, images and Keras float32 reference):
  plan f32 / f16     the execution plan's GL memory for intermediates, inputs and outputs at
                     this batch (model.plan_info()'s planned_bytes, once planned): activation_dtype
                     "float32" and "float16"; ratio f16 / f32
  max abs y, f32 diff  as above
  act diff / rel / top-1    kerasgl with activation_dtype="float16" against Keras float32: max
                     |difference|, that over max abs y, samples whose arg-max agrees
  both diff / rel / top-1   the same with storage_dtype and activation_dtype both "float16"
  ms f32 / act16     with --time CALLS: median planned predict of one image, in ms
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


def reference(name: str, size: int, batch: int, calibration: int) -> tuple:
    """The Keras model measured, and its inputs."""
    if name == "digits":
        return digits_model()
    model = build_application(name, size, calibration)
    return model, apps.inputs(name, size, batch=batch, seed=1)


def measure(name: str, size: int, batch: int, calibration: int, timed: int = 0) -> dict:
    model, x = reference(name, size, batch, calibration)
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


PLAN_CALLS = 4      # predicts of one input shape before its plan is recorded (two agree)


def planned_bytes(model, x) -> int | None:
    """The planned_bytes of the execution plan of predict(x) (one GPU run: len(x) within the
    default batch size), predicting until it is planned; None if predict stays eager."""
    shapes = [tuple(a.shape) for a in (x if isinstance(x, list) else [x])]
    for _ in range(PLAN_CALLS):
        for info in model.plan_info():
            if info.status == "planned" and [tuple(s) for s in info.input_shapes] == shapes:
                return info.planned_bytes
        model.predict(x, verbose=0)
    return None


def agreement(got, expected, scale: float) -> tuple:
    """(max |got - expected|, that / scale, "k/n" samples whose arg-max agrees)."""
    diff = float(np.abs(got - expected).max())
    top1 = f"{int((got.argmax(-1) == expected.argmax(-1)).sum())}/{len(expected)}"
    return diff, diff / scale, top1


def measure_activations(name: str, size: int, batch: int, calibration: int,
                        timed: int = 0) -> dict:
    """--activations' row: kerasgl float32, activation_dtype="float16", and float16 weights and
    activations, each against Keras float32; the plans' memory float32 vs float16 activations."""
    model, x = reference(name, size, batch, calibration)
    expected = np.asarray(model.predict(x, verbose=0), np.float64)
    scale = float(np.abs(expected).max())
    row = {"model": name if name == "digits" else f"{name} {size}", "params": model.count_params(),
           "max|y|": scale}
    loads = {"f32": {}, "act": {"activation_dtype": "float16"},
             "both": {"storage_dtype": "float16", "activation_dtype": "float16"}}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        del model
        gc.collect()
        for key, options in loads.items():
            with kg.load_model(path, **options) as loaded:
                got = np.asarray(loaded.predict(x, verbose=0), np.float64)
                row[key] = agreement(got, expected, scale)
                if key != "both":
                    row[f"plan {key}"] = planned_bytes(loaded, x)
            gc.collect()
        if timed:
            with kg.load_model(path) as full, \
                    kg.load_model(path, activation_dtype="float16") as half:
                row["ms"] = predict_ms(full, half, x[:1], timed)
    return row


ACTIVATION_COLUMNS = ("model", "params", "plan f32", "plan f16", "ratio", "max abs y", "f32 diff",
                      "act diff", "act rel", "act top-1", "both diff", "both rel", "both top-1")


def activation_cells(row: dict) -> list:
    p32, p16 = row["plan f32"], row["plan act"]
    plans = ([human(p32), human(p16), f"{p16 / p32:.3f}"] if p32 and p16 else
             [human(p32) if p32 else "eager", human(p16) if p16 else "eager", "-"])
    act, both = row["act"], row["both"]
    return ([row["model"], f"{row['params']:,}"] + plans +
            [f"{row['max|y|']:.3g}", f"{row['f32'][0]:.2e}",
             f"{act[0]:.2e}", f"{act[1]:.2e}", act[2], f"{both[0]:.2e}", f"{both[1]:.2e}",
             both[2]])


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
                             "(per activation dtype with --activations; interleaved; median ms): "
                             "noisy on a busy machine")
    parser.add_argument("--activations", action="store_true",
                        help="measure activation_dtype='float16' (alone, and with float16 "
                             "weights) instead, and the plans' memory")
    args = parser.parse_args(argv)
    print(machine_line())
    if args.activations:
        columns = ACTIVATION_COLUMNS + (("ms f32", "ms act16") if args.time else ())
    else:
        columns = COLUMNS + (("ms f32", "ms f16") if args.time else ())
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    worst = {}
    for name in args.models:
        if args.activations:
            row = measure_activations(name, args.size, args.batch, args.calibration, args.time)
            for key in ("act", "both"):
                worst[key] = max(worst.get(key, 0.0), row[key][1])
            text = activation_cells(row)
        else:
            row = measure(name, args.size, args.batch, args.calibration, args.time)
            worst["f16"] = max(worst.get("f16", 0.0), row["f16 rel"])
            text = cells(row)
        extra = [f"{ms:.1f}" for ms in row["ms"]] if args.time else []
        print("| " + " | ".join(text + extra) + " |", flush=True)
        keras.backend.clear_session()
        gc.collect()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    largest = "; ".join(f"largest {key} diff relative to max abs y: {value:.2e}"
                        for key, value in worst.items())
    print(f"# {largest}; load average {load} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
