"""A real `kerasgl serve` process on a loopback port for the serving tests, and small Keras models
saved for it. Every request the tests make goes to 127.0.0.1 only."""
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIGITS = os.path.join(REPO, "kerasgl", "_data", "digits_cnn.keras")
TEXT_MODEL = os.path.join(REPO, "tests", "data", "strings", "string_lookup_embedding.keras")
_READY = re.compile(r"kerasgl serve: .* on http://127\.0\.0\.1:(\d+) ")
_GRPC = re.compile(r" and grpc://127\.0\.0\.1:(\d+) ")


def build_models(folder) -> dict:
    """{name: path} of small Keras models saved in `folder`: a one-input MLP, a two-input
    two-output functional model, an int32-input embedding model, a bool-input model, and the
    committed StringLookup + Embedding text model (raw strings in)."""
    import keras
    keras.utils.set_random_seed(3)
    mlp = keras.Sequential([keras.Input((6,), name="features"), keras.layers.Dense(5, activation="relu"),
                            keras.layers.Dense(3, name="scores")], name="mlp")
    a = keras.Input((4,), name="a")
    b = keras.Input((3, 2), name="b")
    joined = keras.layers.Concatenate()([a, keras.layers.Flatten()(b)])
    hidden = keras.layers.Dense(8, activation="tanh")(joined)
    two = keras.Model([a, b], [keras.layers.Dense(2, name="left")(hidden),
                               keras.layers.Dense(3, activation="softmax", name="right")(hidden)],
                      name="two")
    ids = keras.Input((5,), dtype="int32", name="ids")
    embedded = keras.layers.Flatten()(keras.layers.Embedding(10, 3)(ids))
    words = keras.Model(ids, keras.layers.Dense(2, name="vote")(embedded), name="words")
    flags = keras.Input((3,), dtype="bool", name="flags")
    flagged = keras.Model(flags, keras.ops.logical_not(flags), name="flagged")
    paths = {"tokens": TEXT_MODEL}
    for model in (mlp, two, words, flagged):
        paths[model.name] = os.path.join(str(folder), f"{model.name}.keras")
        model.save(paths[model.name])
    paths["digits"] = DIGITS
    return paths


def build_slow_model(folder) -> str:
    """A model whose every predict keeps the GPU busy for seconds (about 5 s on llvmpipe on two
    cores: eight 64-channel 3x3 convolutions at 512x512) from an input of 16 numbers, so that a
    test can act while a GPU job runs."""
    import keras
    keras.utils.set_random_seed(4)
    seed = keras.Input((4, 4, 1), name="seed")
    hidden = keras.layers.UpSampling2D(128)(seed)
    for _ in range(8):
        hidden = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(hidden)
    model = keras.Model(seed, keras.layers.GlobalAveragePooling2D(name="mean")(hidden), name="slow")
    path = os.path.join(str(folder), "slow.keras")
    model.save(path)
    return path


class Server:
    """`kerasgl serve` in a subprocess, on a free loopback port (--port 0); `grpc_port` is the
    gRPC port when it was given --grpc-port (0: a free one)."""

    def __init__(self, models: dict, *options, timeout=180):
        command = [sys.executable, "-m", "kerasgl.cli", "serve", "--port", "0"]
        for name, path in models.items():
            command += ["--model", f"{name}={path}"]
        env = {**os.environ, "PYTHONPATH": REPO, "KERASGL_COMPILE_AHEAD": "0"}
        env.pop("KERASGL_TRACK_LEAKS", None)
        self.process = subprocess.Popen(command + list(options), cwd=REPO, env=env, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.lines: list[str] = []
        ready = threading.Event()
        self.port = None

        def read():
            for line in self.process.stdout:
                self.lines.append(line)
                found = _READY.search(line)
                if found:
                    self.port = int(found.group(1))
                    ready.set()
            ready.set()
        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        if not ready.wait(timeout) or self.port is None:
            self.stop()
            raise AssertionError("the server did not start:\n" + "".join(self.lines))
        self.url = f"http://127.0.0.1:{self.port}"
        grpc = _GRPC.search(self.output())
        self.grpc_port = int(grpc.group(1)) if grpc else None

    def output(self) -> str:
        return "".join(self.lines)

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def wait(self, timeout=30) -> int:
        code = self.process.wait(timeout)
        self._reader.join(5)
        return code

    def stop(self) -> None:
        self.terminate()
        try:
            self.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


def metric(text: str, name: str, **labels) -> float:
    """The value of one sample in Prometheus text (0.0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        key, value = line.rsplit(" ", 1)
        sample, _, rest = key.partition("{")
        found = ",".join(sorted(rest.rstrip("}").split(","))) if rest else ""
        if sample == name and found == wanted:
            return float(value)
    return 0.0


def rss_bytes(pid: int) -> int:
    """A process's resident memory (Linux: /proc), for the load tests' reports."""
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))


def wait_until(condition, timeout=10.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def as_float32(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float32)
