"""Train the small model `kerasgl demo` runs, and save it with sample inputs into kerasgl/_data/.

    KERAS_BACKEND=jax python scripts/train_demo_model.py

Needs keras (+ jax) and scikit-learn, which only this script uses: the demo itself runs with
neither. The data is scikit-learn's 8x8 handwritten digits (1797 images, 16 grey levels; the UCI
"Optical Recognition of Handwritten Digits" set, shipped inside scikit-learn). The model is a
small CNN, so the demo exercises Rescaling, Conv2D, MaxPooling2D, Flatten, Dense and softmax.

Writes:
  kerasgl/_data/digits_cnn.keras     the trained model (Keras 3 format)
  kerasgl/_data/digits_samples.npz   images (N, 8, 8, 1) float32 from the held-out test split,
                                     labels (N,), keras_probs (N, 10): Keras's own predictions,
                                     so the demo can show how close the GPU's answers are
  kerasgl/_data/digits_cnn.json      how it was made (versions, seed, test accuracy)
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 0
SAMPLES = 24
OUT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kerasgl", "_data")


def build_model() -> keras.Model:
    return keras.Sequential([
        keras.Input((8, 8, 1), name="digit"),
        keras.layers.Rescaling(1.0 / 16.0, name="scale"),          # pixels are 0..16
        keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv1"),
        keras.layers.MaxPooling2D(2, name="pool1"),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2"),
        keras.layers.Flatten(name="flatten"),
        keras.layers.Dense(32, activation="relu", name="dense1"),
        keras.layers.Dropout(0.2, name="dropout"),
        keras.layers.Dense(10, activation="softmax", name="probs"),
    ], name="digits_cnn")


def main() -> None:
    keras.utils.set_random_seed(SEED)
    digits = load_digits()
    images = digits.images.astype("float32")[..., None]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.2, random_state=SEED, stratify=digits.target)
    model = build_model()
    model.compile(optimizer=keras.optimizers.Adam(2e-3), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=30, batch_size=32, verbose=0, validation_split=0.1)
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"test accuracy: {accuracy:.4f} on {len(y_test)} held-out digits")

    os.makedirs(OUT_DIR, exist_ok=True)
    model_path = os.path.join(OUT_DIR, "digits_cnn.keras")
    # A fresh, uncompiled copy: the file then holds no optimizer state (a third of the size).
    inference = build_model()
    inference.set_weights(model.get_weights())
    inference.save(model_path)
    samples, labels = x_test[:SAMPLES], y_test[:SAMPLES].astype("int32")
    probs = model.predict(samples, verbose=0).astype("float32")
    np.savez_compressed(os.path.join(OUT_DIR, "digits_samples.npz"), images=samples,
                        labels=labels, keras_probs=probs)
    with open(os.path.join(OUT_DIR, "digits_cnn.json"), "w", encoding="utf-8") as f:
        json.dump({"dataset": "scikit-learn load_digits (8x8, 16 grey levels)",
                   "split": "train_test_split(test_size=0.2, random_state=0, stratify=labels)",
                   "test_accuracy": round(float(accuracy), 4), "test_size": int(len(y_test)),
                   "samples": SAMPLES, "seed": SEED, "epochs": 30,
                   "keras_version": keras.__version__, "backend": keras.backend.backend()},
                  f, indent=2)
        f.write("\n")
    print(f"wrote {model_path} ({os.path.getsize(model_path)} bytes) and {SAMPLES} samples")


if __name__ == "__main__":
    main()
