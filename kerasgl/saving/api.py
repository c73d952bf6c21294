"""Public entry points: read a model file, an architecture JSON, or a weights file.

The file format is told from its first bytes, never from its name (HDF5 files named `.keras`
exist, and so do zip files named `.h5`).

Every error leaving these functions is a KerasGLError; for the file itself a ModelFileError whose
message starts with the file's path (`_about`): the readers below name the layer, member,
dataset or attribute at fault, and anything a damaged file still manages to raise from h5py,
zipfile or json (or a RecursionError / MemoryError) is turned into one here.
"""
from __future__ import annotations

import contextlib
import os
import stat
from typing import Any, Iterator

from ..errors import KerasGLError, ModelFileError
from . import h5, keras_zip
from .config import model_spec_from_config, resolve_keras_major
from .h5_safety import open_h5_file
from .json_text import check_nesting, parse_config_json
from .spec import ModelSpec
from .zip_archive import KerasZip

ZIP_MAGIC = b"PK\x03\x04"
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
# An HDF5 file may start with a user block of 512 * 2**n bytes; its signature follows it.
_HDF5_SIGNATURE_OFFSETS = (0, 512, 1024, 2048, 4096)


@contextlib.contextmanager
def _about(source: str) -> Iterator[None]:
    """Make every error raised inside a KerasGLError that names `source`."""
    try:
        yield
    except ModelFileError as exc:
        if source in str(exc):
            raise
        raise ModelFileError(f"{source}: {exc}") from exc
    except KerasGLError:
        raise
    except RecursionError as exc:
        raise ModelFileError(f"{source}: the file's content is nested too deeply to read") \
            from exc
    except MemoryError as exc:
        raise ModelFileError(f"{source}: ran out of memory reading the file (it declares more "
                             "data than fits)") from exc
    except Exception as exc:    # noqa: BLE001 (a damaged file must not surface as a bare error)
        raise ModelFileError(f"{source}: damaged or unexpected content "
                             f"({type(exc).__name__}: {exc})") from exc


def sniff_format(path: str) -> str:
    """"zip", "hdf5" or "unknown" from the file's magic bytes; ModelFileError if unreadable."""
    if os.path.isdir(path):
        raise ModelFileError(f"{path}: is a directory (a TensorFlow SavedModel?); kerasgl reads "
                             ".keras and .h5 files")
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):       # a FIFO or device would block or never end
            raise ModelFileError(f"{path}: not a regular file")
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
    with _about(source):
        kind = sniff_format(source)
        if kind == "zip":
            return keras_zip.read_keras_zip(source)
        if kind == "hdf5":
            return h5.read_h5_model(source)
        raise ModelFileError(f"{source}: not a Keras model file (neither a .keras zip archive "
                             "nor an HDF5 file)")


def _looks_like_json_text(value: str) -> bool:
    return value.lstrip().startswith("{")


def read_architecture_json(json_text_or_path: str | bytes | os.PathLike | dict) -> ModelSpec:
    """The architecture (no weights) from `model.to_json()` output: the JSON text itself, a path
    to a file holding it, or the already-parsed dict."""
    source = "<json>"
    value: Any = json_text_or_path
    if isinstance(value, os.PathLike) or (isinstance(value, str) and not _looks_like_json_text(value)):
        source = os.fspath(value)
    with _about(source):
        if source != "<json>":
            try:
                with open(source, "rb") as f:
                    value = f.read()
            except OSError as exc:
                raise ModelFileError(f"{source}: cannot read the architecture JSON: {exc}") \
                    from exc
        if isinstance(value, (str, bytes)):
            value = parse_config_json(value, source, "the architecture JSON")
        else:
            check_nesting(value, source, "the architecture")
        if not isinstance(value, dict):
            raise ModelFileError(f"{source}: not a Keras model architecture (JSON object "
                                 "expected)")
        keras_major = resolve_keras_major(value.get("keras_version"), value, source)
        return model_spec_from_config(value, keras_major, source)


def load_weights_into(spec: ModelSpec, weights_path: str | os.PathLike) -> ModelSpec:
    """Fill `spec`'s layer weights from a weights file and return `spec`.

    Accepts a Keras 3 `.weights.h5`, a Keras 2 `save_weights` `.h5`, or a whole model file
    (`.keras` / `.h5`) whose weights fit the architecture. Errors name `weights_path`."""
    source = os.fspath(weights_path)
    with _about(source):
        kind = sniff_format(source)
        if kind == "zip":
            with KerasZip(source) as archive:
                with keras_zip.weights_from_zip(archive) as weights:
                    keras_zip.load_keras3_layout_weights(spec, weights)
            return spec
        if kind != "hdf5":
            raise ModelFileError(f"{source}: not a Keras weights file (neither HDF5 nor .keras)")
        with open_h5_file(source, source) as reader:
            f = reader.f
            if any(g in f for g in keras_zip.LAYERS_GROUPS):
                keras_zip.load_keras3_layout_weights(spec, reader)
            elif "model_weights" in f:
                h5.load_legacy_weights(spec, reader, reader.group(f, "model_weights"))
            elif h5.is_legacy_weights_group(f):
                h5.load_legacy_weights(spec, reader, f)
            else:
                raise ModelFileError(f"{source}: HDF5 file without Keras weights (no 'layers' "
                                     "group and no 'layer_names' attribute)")
        return spec
