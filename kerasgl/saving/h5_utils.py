"""Small, safe helpers for reading Keras HDF5 content with h5py.

Everything here reads plain data only (strings, numeric arrays); h5py never unpickles.
Every h5py/HDF5 failure is turned into a ModelFileError naming the file, so a damaged file
never surfaces as a bare OSError from deep inside h5py.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import h5py
import numpy as np

from ..errors import ModelFileError


@contextlib.contextmanager
def hdf5_errors(source: str, doing: str) -> Iterator[None]:
    """Turn the errors a damaged HDF5 file raises (OSError, KeyError, ...) into ModelFileError."""
    try:
        yield
    except ModelFileError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError, TypeError) as exc:
        raise ModelFileError(f"{source}: damaged or unreadable HDF5 data while {doing}: {exc}") from exc


def open_hdf5(file_or_path, source: str) -> h5py.File:
    """Open an HDF5 file read-only; a truncated or corrupted file raises ModelFileError."""
    with hdf5_errors(source, "opening the file"):
        return h5py.File(file_or_path, "r")


def as_text(value) -> str:
    """HDF5 string attributes come back as str, bytes or numpy bytes depending on the writer."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return as_text(value[()])
    return str(value)


def text_attr(node, name: str) -> str | None:
    """A string attribute of a group/file, or None when it is absent."""
    if name not in node.attrs:
        return None
    return as_text(node.attrs[name])


def text_list_attr(group, name: str) -> list[str] | None:
    """A list-of-strings attribute such as `layer_names` or `weight_names`.

    Keras splits attributes bigger than the 64 KiB HDF5 header limit into `name0`, `name1`, ...
    (see keras' legacy_h5_format.save_attributes_to_hdf5_group); those chunks are joined here.
    An empty list is stored as an empty float array, which also reads as []. Returns None when
    neither the attribute nor its chunks exist.
    """
    if name in group.attrs:
        return [as_text(v) for v in np.asarray(group.attrs[name]).ravel()]
    if f"{name}0" not in group.attrs:
        return None
    values: list[str] = []
    chunk = 0
    while f"{name}{chunk}" in group.attrs:
        values.extend(as_text(v) for v in np.asarray(group.attrs[f"{name}{chunk}"]).ravel())
        chunk += 1
    return values


def read_array(dataset: h5py.Dataset) -> np.ndarray:
    """A dataset as a numpy array (scalars included).

    Keras 3 marks bfloat16 variables with attrs["dtype"] == "bfloat16" and stores their raw
    16-bit patterns; GL has no bfloat16, so they are widened to float32 (exact: bfloat16 is the
    top half of a float32).
    """
    value = np.asarray(dataset[()])
    if text_attr(dataset, "dtype") == "bfloat16":
        bits = np.ascontiguousarray(value).view(np.uint16).astype(np.uint32) << 16
        value = bits.view(np.float32)
    return value
