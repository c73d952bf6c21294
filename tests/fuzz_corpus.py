"""A seeded corpus of hostile and broken model files, for tests/test_hostile_files.py.

Bases: small Keras 3 models (built and saved here, .keras and .h5) and the committed Keras 2
fixtures (tests/data/keras2). Each base has a reference (its inputs and the outputs Keras or
tf-keras gave). Cases are mutations of a base (fuzz_mutations, fuzz_h5): truncations, flipped
and zeroed bytes (of the file, and of the HDF5 and JSON members inside a .keras zip), damaged
HDF5 heaps, hostile configs, weights of the wrong shape and type, size bombs, links and storage
that point outside the file, zip tricks and code-execution bait. Every case says what a correct
reader must do: "refuse" it, or "any" (refuse it, or load it and give the right answer).

Building needs Keras (tests run with KERAS_BACKEND=jax); the same seed gives the same corpus.
"""
from __future__ import annotations

import glob
import os
import shutil
from dataclasses import dataclass, field

import h5py
import numpy as np

import fuzz_h5
import fuzz_mutations as mut
from fuzz_zip import read_members, stored, zip_bytes

KERAS2_DIR = os.path.join(os.path.dirname(__file__), "data", "keras2")
KERAS2_DEFAULT = ("mlp_sequential.h5", "cnn_functional.h5", "nested_sequential.keras")
# fixtures kerasgl refuses on purpose (test_keras2_files.MAY_REFUSE): a base must load
KERAS2_REFUSED: tuple = ()
# per base: how many cases of each random byte mutation (default run, --long-fuzz run)
BYTE_COUNTS = {"truncate": (2, 12), "flip": (4, 30), "zero": (3, 20)}
INNER_COUNTS = {"truncate": (1, 6), "flip": (3, 20), "zero": (3, 20)}
BOMB_BYTES = (2 << 30, 6 << 30)       # a zero-filled zip member: 2 GiB by default, 6 GiB long


@dataclass
class Base:
    key: str                        # "k3_mlp.keras", "mlp_sequential.h5", ...
    path: str
    keras_major: int
    reference: str                  # .npz: input_i (fed) and output_i (Keras' answer)
    model_json: dict = field(default_factory=dict)
    keras_model: object = None      # Keras 3 bases: the live model (changed-weights references)


@dataclass
class Case:
    id: str
    base: str
    category: str
    path: str
    expect: str = mut.ANY
    config_json: str | None = None  # the model config the mutation wrote, when it wrote one


# ----------------------------------------------------------------------------- bases

def _randomize(model, seed):
    rng = np.random.default_rng(seed)
    for var in model.weights:
        value = rng.uniform(-1, 1, var.shape)
        if "variance" in var.path:
            value = np.abs(value) + 0.5
        var.assign(value.astype(var.dtype))
    return model


def _keras3_models(keras):
    L = keras.layers
    x = keras.Input((5,), name="x")
    y = L.Dense(8, activation="relu", name="d1")(x)
    y = L.BatchNormalization(name="bn")(y)
    mlp = keras.Model(x, L.Dense(3, name="out")(y), name="k3_mlp")
    cnn = keras.Sequential([keras.Input((6, 6, 2)), L.Conv2D(3, 3, activation="tanh", name="conv"),
                            L.Flatten(name="flat"), L.Dense(2, name="head")], name="k3_cnn")
    return {"k3_mlp": (_randomize(mlp, 1), (2, 5)), "k3_cnn": (_randomize(cnn, 2), (2, 6, 6, 2))}


def _model_json_of(path: str) -> dict:
    """The config of a trusted base file (read with plain zipfile/h5py)."""
    import json
    import zipfile
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            return json.loads(z.read("config.json"))
    with h5py.File(path, "r") as f:
        text = f.attrs["model_config"]
        return json.loads(text.decode() if isinstance(text, bytes) else text)


def build_bases(workdir: str, long: bool) -> dict[str, Base]:
    import keras
    out = os.path.join(workdir, "bases")
    os.makedirs(out, exist_ok=True)
    bases: dict[str, Base] = {}
    for name, (model, input_shape) in _keras3_models(keras).items():
        x = np.random.default_rng(7).normal(size=input_shape).astype(np.float32)
        reference = os.path.join(out, f"{name}.npz")
        np.savez(reference, input_0=x, output_0=np.asarray(model.predict(x, verbose=0)))
        for ext in (".keras", ".h5"):
            path = os.path.join(out, name + ext)
            model.save(path)
            bases[name + ext] = Base(name + ext, path, 3, reference, _model_json_of(path), model)
    names = [os.path.basename(p) for p in sorted(glob.glob(os.path.join(KERAS2_DIR, "*.h5"))
                                                 + glob.glob(os.path.join(KERAS2_DIR, "*.keras")))
             if not p.endswith(".weights.h5")
             and os.path.basename(p).split(".")[0] not in KERAS2_REFUSED] \
        if long else KERAS2_DEFAULT
    for name in names:
        path = os.path.join(out, name)
        shutil.copyfile(os.path.join(KERAS2_DIR, name), path)
        reference = os.path.join(KERAS2_DIR, os.path.splitext(name)[0] + ".npz")
        bases[name] = Base(name, path, 2, reference, _model_json_of(path))
    return bases


def make_canaries(workdir: str) -> fuzz_h5.Canaries:
    directory = os.path.join(workdir, "canary")
    os.makedirs(directory, exist_ok=True)
    canaries = fuzz_h5.Canaries(directory, os.path.join(directory, "canary.h5"),
                                os.path.join(directory, "canary.bin"))
    h5py.File(canaries.h5, "w").close()
    open(canaries.bin, "wb").close()
    return canaries


# ----------------------------------------------------------------------------- writing cases

class Writer:
    def __init__(self, workdir: str, canaries: fuzz_h5.Canaries):
        self.dir = os.path.join(workdir, "cases")
        os.makedirs(self.dir, exist_ok=True)
        self.canaries = canaries
        self.cases: list[Case] = []

    def path(self, base: Base, category: str, name: str) -> str:
        ext = os.path.splitext(base.key)[1]
        stem = os.path.splitext(base.key)[0]
        return os.path.join(self.dir, f"{stem}{ext.replace('.', '_')}__{category}__{name}{ext}")

    def add(self, base: Base, category: str, name: str, data: bytes, expect=mut.ANY,
            config_json=None) -> None:
        path = self.path(base, category, name)
        with open(path, "wb") as f:
            f.write(data)
        self.cases.append(Case(f"{base.key}/{category}/{name}", base.key, category, path,
                               expect, config_json))

    def h5_edit(self, base: Base, category: str, name: str, edit) -> None:
        """Apply `edit(h5py.File) -> expect` to a copy of the base's HDF5 part (the whole file,
        or the model.weights.h5 member of a .keras zip, which is then zipped again)."""
        scratch = self.path(base, category, name) + ".scratch.h5"
        members = read_members(open(base.path, "rb").read()) if base.key.endswith(".keras") \
            and not h5py.is_hdf5(base.path) else None
        if members is None:
            shutil.copyfile(base.path, scratch)
        else:
            with open(scratch, "wb") as f:
                f.write(next(m.raw for m in members if m.name == "model.weights.h5"))
        try:
            with h5py.File(scratch, "r+") as f:
                expect = edit(f)
            data = open(scratch, "rb").read()
        finally:
            os.remove(scratch)
        if members is not None:
            data = zip_bytes([stored(m.name, data) if m.name == "model.weights.h5" else m
                              for m in members])
        self.add(base, category, name, data, expect)

    def with_config(self, base: Base, category: str, name: str, text: str, expect) -> None:
        if _is_zip(base.path):
            members = read_members(open(base.path, "rb").read())
            data = zip_bytes([stored("config.json", text.encode("utf-8"))
                              if m.name == "config.json" else m for m in members])
            self.add(base, category, name, data, expect, text)
            return

        def edit(f):
            f.attrs["model_config"] = text
            return expect
        self.h5_edit(base, category, name, edit)
        self.cases[-1].config_json = text


def _is_zip(path: str) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04"


# ----------------------------------------------------------------------------- the corpus

def _byte_cases(w: Writer, base: Base, rng, long: bool) -> None:
    data = open(base.path, "rb").read()
    for kind, counts in BYTE_COUNTS.items():
        for i in range(counts[long]):
            w.add(base, kind, str(i), mut.BYTE_MUTATIONS[kind](data, rng))
    if not _is_zip(base.path):
        for name, damaged in mut.heap_damage(data).items():
            w.add(base, "heap", name, damaged)
        return
    members = read_members(data)
    for member, counts in (("model.weights.h5", INNER_COUNTS), ("config.json", {"flip": (2, 10)})):
        inner = next(m.raw for m in members if m.name == member)
        for kind, count in counts.items():
            for i in range(count[long]):
                changed = mut.BYTE_MUTATIONS[kind](inner, rng)
                w.add(base, f"inner_{kind}", f"{member}_{i}", zip_bytes(
                    [stored(m.name, changed) if m.name == member else m for m in members]))
    weights = next(m.raw for m in members if m.name == "model.weights.h5")
    for name, damaged in mut.heap_damage(weights, config=False).items():
        w.add(base, "heap", name, zip_bytes([stored(m.name, damaged) if m.name ==
                                             "model.weights.h5" else m for m in members]))


def _config_cases(w: Writer, base: Base, marker: str) -> None:
    for name, (mutation, expect) in mut.config_mutations(marker, base.keras_major).items():
        try:
            text = mutation(base.model_json)
        except (LookupError, TypeError, AttributeError):
            continue                 # the mutation needs a layer / dialect this base lacks
        if text is not None:
            w.with_config(base, "config", name, text, expect)


def _h5_cases(w: Writer, base: Base, uid: str) -> None:
    scratch = w.path(base, "weights", "probe") + ".probe.h5"
    if _is_zip(base.path):
        raw = next(m.raw for m in read_members(open(base.path, "rb").read())
                   if m.name == "model.weights.h5")
        open(scratch, "wb").write(raw)
    else:
        shutil.copyfile(base.path, scratch)
    with h5py.File(scratch, "r") as f:
        _, layout = fuzz_h5.weights_root(f)
        has_weights = bool(fuzz_h5.weight_datasets(f))
    os.remove(scratch)
    if not has_weights:
        return                       # a model without weight arrays: nothing to operate on
    for name, surgery in fuzz_h5.surgeries(layout).items():
        case_uid = f"{uid}_{name}"

        def edit(f, surgery=surgery, case_uid=case_uid):
            return surgery(fuzz_h5.target(f, case_uid, w.canaries))
        try:
            w.h5_edit(base, "weights", name, edit)
        except (KeyError, ValueError, TypeError, OSError) as exc:
            if name.startswith("attr_"):
                continue             # the attribute this surgery rewrites is not in this file
                                     # (chunked name lists, weights-only files)
            raise AssertionError(f"surgery {name} on {base.key}: {exc}") from exc


def _zip_cases(w: Writer, base: Base, long: bool) -> None:
    members = read_members(open(base.path, "rb").read())
    for name, (trick, expect) in mut.zip_tricks(BOMB_BYTES[long]).items():
        if name == "bomb_metadata" and not any(m.name == "metadata.json" for m in members):
            continue
        w.add(base, "zip", name, zip_bytes(trick(members)), expect)


def _lambda_bait_files(w: Writer, base: Base, marker: str) -> None:
    """A Keras 3 model with a real Lambda layer, saved by Keras (its code marshalled by Keras)."""
    import keras
    x = keras.Input((5,), name="x")
    y = keras.layers.Lambda(lambda t, p=marker: (open(p, "w").close(), t)[1], name="bait")(x)
    model = keras.Model(x, keras.layers.Dense(3, name="out")(y))
    for ext in (".keras", ".h5"):
        path = w.path(base, "bait", "keras_lambda") + ext
        model.save(path)
        w.cases.append(Case(f"{base.key}/bait/keras_lambda{ext}", base.key, "bait", path,
                            mut.REFUSE))
    if os.path.exists(marker):
        os.remove(marker)            # Keras ran the function while building the model


CONFIG_BASES = ("k3_mlp.keras", "k3_cnn.h5", "mlp_sequential.h5", "cnn_functional.h5")
H5_BASES = ("k3_mlp.h5", "k3_mlp.keras", "mlp_sequential.h5")
ZIP_BASES = ("k3_mlp.keras", "nested_sequential.keras")


def build_corpus(workdir: str, bases: dict[str, Base], canaries: fuzz_h5.Canaries, seed: int,
                 long: bool) -> list[Case]:
    rng = np.random.default_rng(seed)
    w = Writer(workdir, canaries)
    marker = os.path.join(canaries.directory, "bait_ran")
    for base in bases.values():
        _byte_cases(w, base, rng, long)
        if long or base.key in CONFIG_BASES:
            _config_cases(w, base, marker)
        if long or base.key in H5_BASES:
            _h5_cases(w, base, f"s{seed}_{len(w.cases)}")
        if _is_zip(base.path) and (long or base.key in ZIP_BASES):
            _zip_cases(w, base, long)
    _lambda_bait_files(w, bases["k3_mlp.keras"], marker)
    return w.cases
