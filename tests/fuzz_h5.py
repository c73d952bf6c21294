"""HDF5 surgery for the hostile-file corpus: weights of the wrong shape and type, size bombs,
links and storage that point outside the file, link cycles, damaged attributes.

Each surgery edits an open copy (h5py, "r+") of a model's HDF5 part and returns what a correct
reader must do with it: "refuse" (a kerasgl error is the only right answer) or "any" (a kerasgl
error, or a load that gives the answer the weights it read imply; see fuzz_harness.judge).
"""
from __future__ import annotations

from dataclasses import dataclass

import h5py
import numpy as np

REFUSE, ANY = "refuse", "any"


@dataclass
class Canaries:
    """Files next to the corpus that no reader may open (fuzz_harness watches them)."""
    directory: str
    h5: str          # an HDF5 file holding copies of the weights that links point to
    bin: str         # raw weight bytes that external storage points to


@dataclass
class Target:
    f: h5py.File
    path: str              # the weight dataset the surgery hits
    data: np.ndarray       # its original value
    layer_group: str       # the weights group of its layer
    layout: str            # "legacy" (model_weights/...) or "keras3" (layers/...)
    uid: str               # unique per case: names in the canary file
    canaries: Canaries


def weights_root(f: h5py.File) -> tuple[str, str]:
    if "model_weights" in f:
        return "model_weights", "legacy"
    if "layers" in f:
        return "layers", "keras3"
    if "_layer_checkpoint_dependencies" in f:
        return "_layer_checkpoint_dependencies", "keras3"
    raise ValueError("no weights tree")


def weight_datasets(f: h5py.File) -> list[str]:
    root, _ = weights_root(f)
    found: list[str] = []
    f[root].visititems(lambda name, obj: found.append(f"{root}/{name}")
                       if isinstance(obj, h5py.Dataset) else None)
    return found


def target(f: h5py.File, uid: str, canaries: Canaries, prefer_ndim: int = 2) -> Target:
    root, layout = weights_root(f)
    paths = weight_datasets(f)
    path = next((p for p in paths if f[p].ndim == prefer_ndim), paths[0])
    return Target(f, path, f[path][()], "/".join(path.split("/")[:2]), layout, uid, canaries)


def _replace(t: Target, **create):
    del t.f[t.path]
    t.f.create_dataset(t.path, **create)


def _canary_copy(t: Target) -> str:
    """The original data, stored in the canary HDF5 file; returns its path there."""
    inside = f"/{t.uid}/data"
    with h5py.File(t.canaries.h5, "a") as c:
        c.create_dataset(inside, data=t.data)
    return inside


def _canary_bytes(t: Target) -> tuple[int, int]:
    raw = np.ascontiguousarray(t.data).tobytes()
    with open(t.canaries.bin, "ab") as c:
        offset = c.tell()
        c.write(raw)
    return offset, len(raw)


# ----------------------------------------------------------------------------- shapes and types

def _reshaped(value):
    return lambda t: (_replace(t, data=value(t.data)), ANY)[1]


def _typed(make, expect):
    def surgery(t: Target):
        _replace(t, **make(t.data))
        return expect
    return surgery


def _references(t: Target):
    n = max(t.data.size, 1)
    _replace(t, shape=(n,), dtype=h5py.ref_dtype)
    t.f[t.path][...] = [t.f.ref] * n
    return REFUSE


def _region_references(t: Target):
    n = max(t.data.size, 1)
    _replace(t, shape=(n,), dtype=h5py.regionref_dtype)
    return REFUSE


def _compound(data):
    out = np.zeros(data.shape, dtype=[("re", "<f4"), ("im", "<f4")])
    out["re"] = data
    return {"data": out}


def _enum(data):
    return {"data": (data > 0).astype("u1"), "dtype": h5py.enum_dtype({"NEG": 0, "POS": 1},
                                                                       basetype="u1")}


def _vlen_floats(t: Target):
    n = max(t.data.shape[0], 1)
    _replace(t, shape=(n,), dtype=h5py.vlen_dtype(np.float32))
    return REFUSE


def _unknown_filter(t: Target):
    """A chunked dataset whose pipeline names a filter no HDF5 build has (id 32767, optional):
    reading it makes HDF5 look for a plugin, i.e. load code named by the environment."""
    del t.f[t.path]
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(t.data.shape or (1,))
    dcpl.set_filter(32767, h5py.h5z.FLAG_OPTIONAL, ())
    space = h5py.h5s.create_simple(t.data.shape or (1,))
    dset = h5py.h5d.create(t.f.id, t.path.encode(), h5py.h5t.IEEE_F32LE, space, dcpl=dcpl)
    dset.write(h5py.h5s.ALL, h5py.h5s.ALL, np.ascontiguousarray(
        t.data.reshape(t.data.shape or (1,)), dtype="<f4"))
    return ANY


# ----------------------------------------------------------------------------- size bombs

def _huge_unallocated(t: Target):
    """100000 x 100000 float32 (37 GiB) declared, nothing written: a file of a few KB."""
    _replace(t, shape=(100000, 100000), dtype="<f4")
    return REFUSE


def _huge_compressed(write_one_chunk: bool):
    def surgery(t: Target):
        _replace(t, shape=(40000, 40000), dtype="<f4", chunks=(1000, 1000), compression="gzip")
        if write_one_chunk:
            t.f[t.path][:1000, :1000] = 0.0
        return REFUSE
    return surgery


# ----------------------------------------------------------------------------- outside the file

def _external_storage(absolute: bool):
    def surgery(t: Target):
        offset, size = _canary_bytes(t)
        name = t.canaries.bin if absolute else "canary.bin"   # the reader's cwd is the canary dir
        _replace(t, shape=t.data.shape, dtype=t.data.dtype, external=[(name, offset, size)])
        return REFUSE
    return surgery


def _external_link(absolute: bool, whole_layer: bool = False):
    def surgery(t: Target):
        inside = _canary_copy(t)
        name = t.canaries.h5 if absolute else "canary.h5"
        if whole_layer:
            with h5py.File(t.canaries.h5, "a") as c:
                t.f.copy(t.f[t.layer_group], c, name=f"/{t.uid}/layer")
            del t.f[t.layer_group]
            t.f[t.layer_group] = h5py.ExternalLink(name, f"/{t.uid}/layer")
        else:
            del t.f[t.path]
            t.f[t.path] = h5py.ExternalLink(name, inside)
        return REFUSE
    return surgery


def _virtual(t: Target):
    inside = _canary_copy(t)
    layout = h5py.VirtualLayout(shape=t.data.shape, dtype=t.data.dtype)
    layout[...] = h5py.VirtualSource(t.canaries.h5, inside, shape=t.data.shape)
    del t.f[t.path]
    t.f.create_virtual_dataset(t.path, layout, fillvalue=0)
    return REFUSE


# ----------------------------------------------------------------------------- links in the file

def _soft_outside(t: Target):
    t.f[f"/stash_{t.uid}"] = t.data
    del t.f[t.path]
    t.f[t.path] = h5py.SoftLink(f"/stash_{t.uid}")
    return REFUSE


def _soft_inside(t: Target):
    stash = f"{t.layer_group}_stash_{t.uid}" if t.layout == "keras3" else \
        f"{t.layer_group}/stash_{t.uid}"
    t.f[stash] = t.data
    del t.f[t.path]
    t.f[t.path] = h5py.SoftLink("/" + stash)
    return ANY


def _soft(path_of):
    def surgery(t: Target):
        del t.f[t.path]
        t.f[t.path] = h5py.SoftLink(path_of(t))
        return ANY
    return surgery


def _group_cycle(hard: bool):
    def surgery(t: Target):
        group = t.f[t.layer_group]
        group["loop"] = group if hard else h5py.SoftLink("/" + t.layer_group)
        return ANY
    return surgery


def _deep_groups(t: Target):
    t.f.require_group(t.layer_group + "/g" * 1200)
    return ANY


# ----------------------------------------------------------------------------- attributes

def _attr(where, name, value, expect=ANY):
    def surgery(t: Target):
        node = t.f[where(t)] if callable(where) else t.f[where]
        if name in node.attrs:
            del node.attrs[name]
        node.attrs[name] = value(t) if callable(value) else value
        return expect
    return surgery


def _legacy_weight_names(rewrite):
    def surgery(t: Target):
        group = t.f[t.layer_group]
        names = [n.decode() if isinstance(n, bytes) else str(n)
                 for n in group.attrs["weight_names"]]
        group.attrs["weight_names"] = [n.encode() for n in rewrite(names, t)]
        return ANY
    return surgery


def _model_config_reference(t: Target):
    del t.f.attrs["model_config"]
    t.f.attrs.create("model_config", t.f.ref, dtype=h5py.ref_dtype)
    return ANY


_STR = h5py.string_dtype()

COMMON = {
    "shape_transposed": _reshaped(lambda d: d.T.copy() if d.ndim > 1 else d[:-1]),
    "shape_flat": _reshaped(lambda d: d.reshape(-1)),
    "shape_extra_axis": _reshaped(lambda d: d[None]),
    "shape_scalar": _reshaped(lambda d: np.float32(1.5)),
    "shape_empty": _reshaped(lambda d: np.zeros((0,), np.float32)),
    "dtype_fixed_string": _typed(lambda d: {"data": np.full(d.shape, b"0.5", "S3")}, REFUSE),
    "dtype_vlen_string": _typed(lambda d: {"data": np.full(d.shape, "0.5", object),
                                           "dtype": _STR}, REFUSE),
    "dtype_compound": _typed(_compound, REFUSE),
    "dtype_reference": _references,
    "dtype_region_reference": _region_references,
    "dtype_complex": _typed(lambda d: {"data": d.astype(np.complex64)}, REFUSE),
    "dtype_enum": _typed(_enum, REFUSE),
    "dtype_vlen_float": _vlen_floats,
    "dtype_subarray": _typed(lambda d: {"shape": d.shape[:1] or (1,), "dtype": np.dtype(
        ("<f4", d.shape[1:] or (1,)))}, REFUSE),
    "dtype_bool": _typed(lambda d: {"data": d > 0}, ANY),
    "dtype_int32": _typed(lambda d: {"data": np.round(d * 4).astype(np.int32)}, ANY),
    "dtype_uint8": _typed(lambda d: {"data": (np.abs(d) * 100).astype(np.uint8)}, ANY),
    "dtype_float16": _typed(lambda d: {"data": d.astype(np.float16)}, ANY),
    "dtype_float64": _typed(lambda d: {"data": d.astype(np.float64)}, ANY),
    "dtype_big_endian": _typed(lambda d: {"data": d.astype(">f4")}, ANY),
    "gzip_shuffle": _typed(lambda d: {"data": d, "compression": "gzip", "shuffle": True}, ANY),
    "fletcher32": _typed(lambda d: {"data": d, "fletcher32": True, "chunks": d.shape or None}, ANY),
    "lzf": _typed(lambda d: {"data": d, "compression": "lzf"}, ANY),
    "scaleoffset": _typed(lambda d: {"data": d, "scaleoffset": 2}, ANY),
    "unknown_filter": _unknown_filter,
    "huge_unallocated": _huge_unallocated,
    "huge_compressed_empty": _huge_compressed(False),
    "huge_compressed_one_chunk": _huge_compressed(True),
    "missing": lambda t: (t.f.__delitem__(t.path), ANY)[1],
    "external_storage_absolute": _external_storage(True),
    "external_storage_relative": _external_storage(False),
    "external_link_absolute": _external_link(True),
    "external_link_relative": _external_link(False),
    "external_link_layer_group": _external_link(True, whole_layer=True),
    "virtual_dataset": _virtual,
    "soft_link_outside_tree": _soft_outside,
    "soft_link_inside_tree": _soft_inside,
    "soft_link_dangling": _soft(lambda t: "/no/such/dataset"),
    "soft_link_to_itself": _soft(lambda t: "/" + t.path),
    "soft_link_group_cycle": _group_cycle(hard=False),
    "hard_link_group_cycle": _group_cycle(hard=True),
    "deep_groups": _deep_groups,
    "attr_weight_dtype_bfloat16": _attr(lambda t: t.path, "dtype", "bfloat16"),
    "attr_weight_dtype_int": _attr(lambda t: t.path, "dtype", np.arange(3)),
}

LEGACY = {
    "attr_layer_names_int": _attr("model_weights", "layer_names", np.arange(4)),
    "attr_layer_names_ghost": _attr("model_weights", "layer_names", [b"ghost", b"spirit"]),
    "attr_layer_names_2d": _attr("model_weights", "layer_names",
                                 np.array([[b"a", b"b"], [b"c", b"d"]])),
    "attr_layer_names_compound": _attr("model_weights", "layer_names",
                                       np.zeros(3, dtype=[("a", "i4"), ("b", "f4")])),
    "attr_weight_names_absolute": _legacy_weight_names(lambda names, t: [
        "/" + t.layer_group + "/" + n for n in names]),
    "attr_weight_names_dotdot": _legacy_weight_names(lambda names, t: ["../" + n for n in names]),
    "attr_weight_names_doubled": _legacy_weight_names(lambda names, t: names + names),
    "attr_model_config_int": _attr("/", "model_config", np.arange(10)),
    "attr_model_config_2d": _attr("/", "model_config", np.array([[b"{", b"}"], [b"{", b"}"]])),
    "attr_model_config_empty": _attr("/", "model_config", ""),
    "attr_model_config_reference": _model_config_reference,
    "attr_keras_version_float": _attr("/", "keras_version", 2.5),
}

KERAS3 = {
    "attr_vars_name_int": _attr(lambda t: t.layer_group + "/vars", "name", 7),
    "vars_named_wrong": lambda t: (t.f.move(t.path, t.path.rsplit("/", 1)[0] + "/x"), ANY)[1],
    "vars_gap": lambda t: (t.f.move(t.path, t.path.rsplit("/", 1)[0] + "/9"), ANY)[1],
}


def surgeries(layout: str) -> dict:
    return {**COMMON, **(LEGACY if layout == "legacy" else KERAS3)}
