"""Checks on an HDF5 file's raw bytes, made before libhdf5 is handed the file.

Two kinds of damage make libhdf5 misbehave in ways no later check can catch:

- The global heap (where variable-length strings live: model_config, keras_version, layer and
  weight names of some writers) is decoded object by object, each header giving the object's
  size. An object of index 0 and size 0 (a zeroed header) never moves the decoder forward: reading
  any string attribute of such a file spins forever (libhdf5 2.0, H5HG__cache_heap_deserialize);
  a size that wraps around makes it step backwards, the same. Every collection ("GCOL") is
  walked here as libhdf5 would walk it, and a file whose walk would not reach the collection's
  end exactly is refused.
- A superblock whose end-of-file address lies past the real end (a truncated file), or that names
  a file driver (the multi/family drivers keep the data in other files), fails libhdf5's open,
  which then searches HDF5_PLUGIN_PATH for a driver plugin to try: refused here first.
"""
from __future__ import annotations

import mmap
import os
from contextlib import contextmanager
from typing import Iterator

from ..errors import ModelFileError

SIGNATURE = b"\x89HDF\r\n\x1a\n"
_SIGNATURE_OFFSETS = (0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
_HEAP_MAGIC = b"GCOL"
_HEAP_MIN_SIZE = 4096           # H5HG_MINSIZE: libhdf5 refuses smaller collections itself
_UNDEFINED = (1 << 64) - 1
_WRAP = 1 << 64


@contextmanager
def file_bytes(path: str) -> Iterator[bytes]:
    """The file's bytes, mapped (not read) into memory."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield mapped


def _superblock(data, source: str, label: str) -> tuple[int, int]:
    """(offset of the signature, size of lengths) after checking the superblock's claims."""
    where = f"{source}: {label}" if label else source
    base = next((o for o in _SIGNATURE_OFFSETS if data[o:o + 8] == SIGNATURE), None)
    if base is None:
        raise ModelFileError(f"{where} is not an HDF5 file (no HDF5 signature)")
    version = data[base + 8] if len(data) > base + 8 else -1
    if version in (0, 1):
        fields = base + (24 if version == 0 else 28)
        offsets, lengths = data[base + 13], data[base + 14]
        names = ("base address", "free-space address", "end-of-file address", "driver block")
    elif version in (2, 3):
        fields = base + 12
        offsets, lengths = data[base + 9], data[base + 10]
        names = ("base address", "extension address", "end-of-file address", "root address")
    else:
        raise ModelFileError(f"{where}: HDF5 superblock version {version} is not one kerasgl "
                             "reads (damaged file?)")
    if offsets not in (2, 4, 8) or lengths not in (2, 4, 8):
        raise ModelFileError(f"{where}: damaged HDF5 superblock (sizes {offsets}/{lengths})")
    end = fields + 4 * offsets
    if len(data) < end:
        raise ModelFileError(f"{where}: truncated HDF5 file ({len(data)} bytes)")
    values = {name: int.from_bytes(data[fields + i * offsets:fields + (i + 1) * offsets],
                                   "little") for i, name in enumerate(names)}
    undefined = (1 << (8 * offsets)) - 1
    stored_eof = values["end-of-file address"]
    if stored_eof != undefined and stored_eof > len(data):
        raise ModelFileError(f"{where}: truncated HDF5 file: it holds {len(data)} bytes, its "
                             f"superblock says {stored_eof}")
    if version in (0, 1) and values["driver block"] != undefined:
        raise ModelFileError(f"{where}: written with an HDF5 file driver that keeps data in "
                             "other files (multi/family); kerasgl reads single files only")
    return base, lengths


def _heap_problem(data, start: int, lengths: int) -> str | None:
    """Why libhdf5's walk over the collection at `start` would not end, or None."""
    size = int.from_bytes(data[start + 8:start + 8 + lengths], "little")
    end = start + size
    if size < _HEAP_MIN_SIZE or end > len(data):
        return None         # libhdf5 refuses this collection itself, before decoding objects
    header = 2 + 2 + 4 + lengths
    p = start + 8 + lengths
    while p < end:
        if p + header > end:
            return None     # libhdf5 takes the last few bytes as free space
        index = int.from_bytes(data[p:p + 2], "little")
        object_size = int.from_bytes(data[p + 8:p + 8 + lengths], "little")
        if index > 0:
            aligned = ((object_size + 7) % _WRAP) // 8 * 8
            need = (header + aligned) % _WRAP
        else:
            need = object_size
        if need == 0:
            return f"heap object at byte {p} has size 0 (a zeroed header)"
        if p + need > end:
            return (f"heap object at byte {p} claims {object_size} bytes, more than its "
                    f"collection holds")
        p += need
    return None


def check_hdf5_bytes(data, source: str, label: str = "") -> None:
    """ModelFileError for the damage described in the module docstring. `data`: the whole file
    (bytes, or a mmap from file_bytes); `label` names a member file ("model.weights.h5")."""
    _, lengths = _superblock(data, source, label)
    position = data.find(_HEAP_MAGIC)
    while position >= 0:
        # version 1 and three reserved zero bytes: how every writer lays a collection out
        if data[position + 4:position + 8] == b"\x01\x00\x00\x00":
            problem = _heap_problem(data, position, lengths)
            if problem:
                where = f"{source}: {label}" if label else source
                raise ModelFileError(f"{where}: damaged HDF5 global heap (where its strings "
                                     f"live): {problem}")
        position = data.find(_HEAP_MAGIC, position + 1)
