"""`kerasgl demo`: classify handwritten digits on the GPU with the small CNN shipped in the package.

The model (kerasgl/_data/digits_cnn.keras) was trained in Keras by scripts/train_demo_model.py
on scikit-learn's 8x8 digits; digits_samples.npz holds held-out test digits, their labels and
Keras's own predictions for them. The demo needs neither Keras nor scikit-learn.

It prints the predictions against the true labels, how far they are from Keras's, the time from
loading to the first prediction and of later predictions, and the GPU memory (kerasgl's count and
the driver's) before loading, after predicting and after disposing. Exit status 1 if the GPU's
probabilities differ from Keras's by more than 1e-4.
"""
from __future__ import annotations

import json
import statistics
import time
from importlib import resources

import numpy as np

import kerasgl as kg

TOLERANCE = 1e-4
SHADES = " .:-=+*#%@"


def data_path(name: str) -> str:
    return str(resources.files("kerasgl._data").joinpath(name))


def load_samples():
    with np.load(data_path("digits_samples.npz")) as data:
        return data["images"], data["labels"], data["keras_probs"]


def ascii_digits(images, labels, count: int = 8) -> str:
    """Side-by-side text pictures of the first `count` digits (grey levels 0..16)."""
    count = min(count, len(images))
    rows = []
    for y in range(images.shape[1]):
        cells = []
        for i in range(count):
            levels = np.clip(images[i, y, :, 0] / 16.0 * (len(SHADES) - 1), 0, len(SHADES) - 1)
            cells.append("".join(SHADES[int(round(v))] * 2 for v in levels))
        rows.append("   ".join(cells))
    rows.append("   ".join(f"true {labels[i]}".center(images.shape[2] * 2) for i in range(count)))
    return "\n".join(rows)


def gpu_counts(kg) -> tuple:
    """Tensors, their bytes, buffers and textures by kerasgl's count and by the driver's."""
    mem, drv = kg.memory(), kg.driver_objects().counts()
    return (mem.num_tensors, mem.num_bytes, mem.num_buffers, mem.num_textures,
            drv["buffer"], drv["texture"])


def gpu_state(kg) -> str:
    mem = kg.memory()
    drv = kg.driver_objects().counts()
    return (f"kerasgl: {mem.num_tensors} tensors, {mem.num_bytes:,} bytes of tensors, GL objects "
            f"{mem.num_buffers} buffers / {mem.num_textures} textures / {mem.num_programs} programs"
            f" | driver: {drv['buffer']} buffers / {drv['texture']} textures / "
            f"{drv['program']} programs")


def main(repeats: int = 20) -> int:

    images, labels, keras_probs = load_samples()
    with open(data_path("digits_cnn.json"), encoding="utf-8") as f:
        about = json.load(f)
    info = kg.info()
    print(f"kerasgl {kg.__version__} demo: a small CNN trained in Keras on scikit-learn's 8x8 "
          f"digits ({about['test_accuracy']:.1%} test accuracy in Keras)")
    print(f"GPU: {info.renderer} ({info.vendor}), OpenGL {info.version}")
    print()
    print(ascii_digits(images, labels))
    print()
    print(f"before loading:   {gpu_state(kg)}")
    initial = gpu_counts(kg)

    start = time.perf_counter()
    model = kg.load_model(data_path("digits_cnn.keras"))
    loaded = time.perf_counter()
    try:
        probs = model.predict(images, verbose=0)
        first = time.perf_counter()
        print(f"loaded:           {gpu_state(kg)}")
        print(f"model '{model.name}': {len(model.layers)} layers, {model.count_params():,} parameters, "
              f"input {model.inputs[0].shape}, output {model.outputs[0].shape}")
        print()

        predicted = probs.argmax(axis=1)
        print("  #  true  predicted  confidence")
        for i, (truth, guess) in enumerate(zip(labels, predicted)):
            mark = "" if truth == guess else "   <- wrong"
            print(f"{i:3d}  {truth:4d}  {guess:9d}  {probs[i, guess]:10.4f}{mark}")
        correct = int((predicted == labels).sum())
        difference = float(np.abs(probs - keras_probs).max())
        print(f"\ncorrect: {correct}/{len(labels)}; predictions identical to Keras's: "
              f"{bool((predicted == keras_probs.argmax(axis=1)).all())}; "
              f"largest |kerasgl - Keras| probability difference: {difference:.2e}")

        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            model.predict(images, verbose=0)
            times.append(time.perf_counter() - t0)
        print(f"time: load {1000 * (loaded - start):.0f} ms, load to first prediction "
              f"{1000 * (first - start):.0f} ms (includes compiling the shaders); steady state "
              f"{1000 * statistics.median(times):.1f} ms per predict of {len(images)} digits "
              f"(median of {repeats})")
        print(f"after predicting: {gpu_state(kg)}")
    finally:
        model.dispose()
    print(f"after dispose:    {gpu_state(kg)}  (compiled programs stay cached)")
    released = gpu_counts(kg) == initial
    print(f"every buffer and texture released: {'yes' if released else 'NO'}")

    status = 0
    if difference > TOLERANCE:
        print(f"FAILED: the GPU's probabilities differ from Keras's by more than {TOLERANCE}")
        status = 1
    if not released:
        print("FAILED: GPU objects are left after dispose")
        status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
