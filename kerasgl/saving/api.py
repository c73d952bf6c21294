"""Public entry points: read a model file, an architecture JSON, or a weights file.

The file format is told from its first bytes, never from its name (HDF5 files named `.keras`
exist, and so do zip files named `.h5`).
"""
from __future__ import annotations

import json
import os
from typing import Any

from ..errors import ModelFileError
from . import h5, keras_zip
from .config import model_spec_from_config, resolve_keras_major
from .h5_utils import hdf5_errors, open_hdf5
from .spec import ModelSpec

ZIP_MAGIC = b"PK\x03\x04"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# An HDF5 file may start with a user block of 512 * 2**n bytes; its signature follows it.
_HDF5_SIGNATURE_OFFSETS = (0, 512, 1024, 2048, 4096)


def sniff_format(path: str) -> str:
    """"zip", "hdf5" or "unknown" from the file's magic bytes; ModelFileError if unreadable."""
    if os.path.isdir(path):
        raise ModelFileError(f"{path}: is a directory (a TensorFlow SavedModel?); kerasgl reads "
                             ".keras and .h5 files")
    try:
        with open(path, "rb") as f:
            head = f.read(_HDF5_SIGNATURE_OFFSETS[-1] + len(HDF5_MAGIC))
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the file: {exc}") from exc
    if head.startswith(ZIP_MAGIC):
        return "zip"
    if any(head[offset:offset + len(HDF5_MAGIC)] == HDF5_MAGIC
           for offset in _HDF5_SIGNATURE_OFFSETS):
        return "hdf5"
    return "unknown"


def read_model(path: str | os.PathLike) -> ModelSpec:
    """A whole model (architecture and weights) from a Keras 3 `.keras`, a Keras 3 legacy `.h5`
    or a Keras 2 / tf.keras `.h5` written by `model.save()`."""
    source = os.fspath(path)
    kind = sniff_format(source)
    if kind == "zip":
        return keras_zip.read_keras_zip(source)
    if kind == "hdf5":
        return h5.read_h5_model(source)
    raise ModelFileError(f"{source}: not a Keras model file (neither a .keras zip archive nor an "
                         "HDF5 file)")


def _looks_like_json_text(value: str) -> bool:
    return value.lstrip().startswith("{")


def read_architecture_json(json_text_or_path: str | bytes | os.PathLike | dict) -> ModelSpec:
    """The architecture (no weights) from `model.to_json()` output: the JSON text itself, a path
    to a file holding it, or the already-parsed dict."""
    source = "<json>"
    value: Any = json_text_or_path
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, os.PathLike) or (isinstance(value, str) and not _looks_like_json_text(value)):
        source = os.fspath(value)
        try:
            with open(source, "r", encoding="utf-8") as f:
                value = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelFileError(f"{source}: cannot read the architecture JSON: {exc}") from exc
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ModelFileError(f"{source}: not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ModelFileError(f"{source}: not a Keras model architecture (JSON object expected)")
    keras_major = resolve_keras_major(value.get("keras_version"), value, source)
    return model_spec_from_config(value, keras_major, source)


def load_weights_into(spec: ModelSpec, weights_path: str | os.PathLike) -> ModelSpec:
    """Fill `spec`'s layer weights from a weights file and return `spec`.

    Accepts a Keras 3 `.weights.h5`, a Keras 2 `save_weights` `.h5`, or a whole model file
    (`.keras` / `.h5`) whose weights fit the architecture. Errors name `weights_path`."""
    source = os.fspath(weights_path)
    kind = sniff_format(source)
    if kind == "zip":
        with keras_zip.open_keras_zip(source) as archive:
            with keras_zip.weights_h5_from_zip(archive, source) as weights:
                keras_zip.load_keras3_layout_weights(spec, weights, source)
        return spec
    if kind != "hdf5":
        raise ModelFileError(f"{source}: not a Keras weights file (neither HDF5 nor .keras)")
    with open_hdf5(source, source) as f:
        with hdf5_errors(source, "reading the weights file layout"):
            if any(g in f for g in keras_zip.LAYERS_GROUPS):
                layout = "keras3"
            elif "model_weights" in f:
                layout = "model_file"
            elif h5.is_legacy_weights_group(f):
                layout = "legacy"
            else:
                layout = "unknown"
        if layout == "keras3":
            keras_zip.load_keras3_layout_weights(spec, f, source)
        elif layout == "model_file":
            h5.load_legacy_weights(spec, f["model_weights"], source)
        elif layout == "legacy":
            h5.load_legacy_weights(spec, f, source)
        else:
            raise ModelFileError(f"{source}: HDF5 file without Keras weights (no 'layers' group "
                                 "and no 'layer_names' attribute)")
    return spec

