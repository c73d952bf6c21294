"""Small helpers for reading Keras HDF5 content with h5py (used by h5_safety.H5Reader).

Every h5py/HDF5 failure is turned into a ModelFileError naming the file, so a damaged file
never surfaces as a bare OSError from deep inside h5py. h5py never unpickles.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np

from ..errors import ModelFileError


@contextlib.contextmanager
def hdf5_errors(source: str, doing: str) -> Iterator[None]:
    """Turn the errors a damaged HDF5 file raises (OSError, KeyError, ...) into ModelFileError."""
    try:
        yield
    except ModelFileError:
        raise
    except (OSError, KeyError, RuntimeError, ValueError, TypeError, OverflowError,
            IndexError, AttributeError) as exc:
        raise ModelFileError(f"{source}: damaged or unreadable HDF5 data while {doing}: {exc}") \
            from exc


def as_text(value) -> str:
    """HDF5 string attributes come back as str, bytes or numpy bytes depending on the writer."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return as_text(value[()])
    if not isinstance(value, str):
        raise ValueError(f"{type(value).__name__} where a string is expected")
    return value
