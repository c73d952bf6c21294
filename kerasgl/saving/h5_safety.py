"""Reading a Keras HDF5 file without following anything out of it, and without allocating what
it cannot hold.

H5Reader is the only way saving/ touches HDF5 content (after h5_prescan has checked the raw
bytes). It walks links itself, one path component at a time, looking at each link before it
follows it (h5py's `get(name, getlink=True)` reads the link, never its target):
- ExternalLinks and user-defined links are refused (Keras refuses them too: "Not allowed: H5 file
  with ExternalLink"); soft links are followed only to targets inside the weights tree (the
  group the reader was told to stay in: /model_weights, /layers, ...), a few in a row at most;
- datasets with external storage (their bytes live in other files) or virtual datasets (mapped
  from other files) are refused, and so are filters libhdf5 would load a plugin for;
- every dataset's declared size is checked against the bytes it has on disk and the file's size
  before it is read (no filter: it must fit the file; compressed: MAX_EXPANSION times its
  stored bytes, above EXPANSION_FLOOR), and all arrays of a file together against
  limits.array_budget;
- weights must be plain numbers (no strings, compounds, references, enums, vlen data);
- attributes are checked with the low-level h5a API (type class, dataspace size) before their
  value is read;
- an object reached twice (a link cycle, or a name listed twice) is refused.
Errors are ModelFileErrors naming the file, the member (`label`, for a .keras zip) and the
dataset, link or attribute.
"""
from __future__ import annotations

import contextlib
import io
import math
from typing import Iterator

import h5py
import numpy as np

from ..errors import ModelFileError
from .h5_prescan import check_hdf5_bytes, file_bytes
from .h5_utils import as_text, hdf5_errors
from .limits import (MAX_ATTR_STRINGS, MAX_CHUNK_BYTES, MAX_CONFIG_BYTES, MAX_SOFT_LINK_HOPS,
                     SMALL_DATASET_BYTES, array_budget, expansion_allowed, readable_size)

# libhdf5's built-in filters and h5py's LZF (registered by h5py itself, no plugin):
# deflate, shuffle, fletcher32, szip, nbit, scaleoffset, lzf
_KNOWN_FILTERS = {1, 2, 3, 4, 5, 6, 32000}
_COMPRESSING_FILTERS = {1, 4, 5, 6, 32000}


@contextlib.contextmanager
def open_h5_file(path: str, source: str) -> Iterator["H5Reader"]:
    """An H5Reader on the file at `path`, once its raw bytes passed h5_prescan."""
    with file_bytes(path) as data:
        check_hdf5_bytes(data, source)
        size = len(data)
    with _opened(path, source) as f:
        yield H5Reader(f, source, size)


@contextlib.contextmanager
def open_h5_bytes(data: bytes, source: str, label: str) -> Iterator["H5Reader"]:
    """An H5Reader on an HDF5 file held in memory (`label`: its name inside `source`)."""
    check_hdf5_bytes(data, source, label)
    with _opened(io.BytesIO(data), f"{source}: {label}") as f:
        yield H5Reader(f, source, len(data), label)


@contextlib.contextmanager
def _opened(file_or_path, where: str) -> Iterator[h5py.File]:
    with hdf5_errors(where, "opening the file"):
        f = h5py.File(file_or_path, "r")
    try:
        yield f
    finally:
        f.close()


class H5Reader:
    """One open HDF5 file; `size` its length in bytes; `label` the member name inside a zip."""

    def __init__(self, f: h5py.File, source: str, size: int, label: str = ""):
        self.f = f
        self.source = source
        self.size = size
        self.label = label
        self.tree = "/"              # soft links may point inside this group only
        self._visited: set[int] = set()
        self._declared = 0

    # -- messages ---------------------------------------------------------------------------------
    def where(self, path: str) -> str:
        member = f"{self.label} " if self.label else ""
        return f"{self.source}: {member}{path!r}"

    def fail(self, path: str, problem: str) -> ModelFileError:
        return ModelFileError(f"{self.where(path)}: {problem}")

    # -- links ------------------------------------------------------------------------------------
    def node(self, group: h5py.Group, relative: str):
        """The object at `relative` (a path of one or more components, no leading "/") under
        `group`, or None when nothing is there. Every link on the way is checked."""
        parts = relative.split("/")
        if not relative or any(p in ("", ".") for p in parts):
            raise self.fail(f"{group.name.rstrip('/')}/{relative}",
                            "is not a plain path inside its group (absolute, empty or '.' parts)")
        current = group
        for part in parts:
            if not isinstance(current, h5py.Group):
                raise self.fail(current.name, f"is a dataset, but {relative!r} goes through it")
            current = self._child(current, part, 0)
            if current is None:
                return None
        return current

    def group(self, group: h5py.Group, relative: str) -> h5py.Group | None:
        found = self.node(group, relative)
        if found is not None and not isinstance(found, h5py.Group):
            raise self.fail(found.name, "is a dataset where a group is expected")
        return found

    def names(self, group: h5py.Group) -> list[str]:
        """The link names in `group` (links are listed, not followed)."""
        with hdf5_errors(self.where(group.name), "listing a group"):
            return list(group.keys())

    def enter(self, obj) -> None:
        """Mark `obj` as read; reaching it again means a link cycle (or a name listed twice)."""
        with hdf5_errors(self.where(obj.name), "reading an object header"):
            address = h5py.h5o.get_info(obj.id).addr
        if address in self._visited:
            raise self.fail(obj.name, "is reached a second time (a link cycle, or a name listed "
                                      "twice); kerasgl reads every group and dataset once")
        self._visited.add(address)

    def _child(self, group: h5py.Group, name: str, hops: int):
        path = f"{group.name.rstrip('/')}/{name}"
        with hdf5_errors(self.where(path), "reading a link"):
            try:
                link = group.get(name, getlink=True)
            except TypeError as exc:       # h5py: a link class it does not know
                raise self.fail(path, "is a user-defined link; kerasgl reads nothing outside "
                                      "the model file") from exc
            if link is None:
                return None
            if isinstance(link, h5py.ExternalLink):
                raise self.fail(path, f"is an ExternalLink (to {link.path!r} in file "
                                      f"{link.filename!r}); kerasgl reads nothing outside the "
                                      "model file")
            if isinstance(link, h5py.SoftLink):
                return self._follow_soft(path, group, link.path, hops)
            return group[name]

    def _follow_soft(self, path: str, group: h5py.Group, target: str, hops: int):
        if hops >= MAX_SOFT_LINK_HOPS:
            raise self.fail(path, f"soft links chain more than {MAX_SOFT_LINK_HOPS} times")
        absolute = target if target.startswith("/") else f"{group.name.rstrip('/')}/{target}"
        parts = [p for p in absolute.split("/") if p]
        tree = [p for p in self.tree.split("/") if p]
        if "." in parts or parts[:len(tree)] != tree or len(parts) == len(tree):
            raise self.fail(path, f"is a soft link to {target!r}, which leaves the weights "
                                  f"tree {self.tree!r}")
        current = self.f
        for part in parts:
            if not isinstance(current, h5py.Group):
                return None
            current = self._child(current, part, hops + 1)
            if current is None:
                return None
        return current

    # -- datasets ---------------------------------------------------------------------------------
    def array(self, dataset, owner: str = "") -> np.ndarray:
        """A weight dataset's value, after every check in the module docstring. `owner` ("layer
        'dense'") goes into error messages."""
        path = getattr(dataset, "name", "?")
        of = f" (a weight of {owner})" if owner else ""
        if not isinstance(dataset, h5py.Dataset):
            raise self.fail(path, f"is a group where a weight dataset is expected{of}")
        bfloat16 = self.text(dataset, "dtype") == "bfloat16"
        with hdf5_errors(self.where(path), "reading a dataset's header"):
            value_shape, dtype = self._checked_layout(dataset, path, of, bfloat16)
            self.enter(dataset)
        with hdf5_errors(self.where(path), "reading a weight"):
            value = np.asarray(dataset[()])
        if value.shape != value_shape:
            raise self.fail(path, f"read as shape {value.shape}, declared {value_shape}{of}")
        if value.dtype.byteorder not in ("=", "|"):
            value = value.astype(value.dtype.newbyteorder("="))
        if bfloat16:
            # Keras 3 stores bfloat16 variables as their raw 16-bit patterns (an opaque type);
            # GL has no bfloat16, so they are widened to float32 (exact: bfloat16 is the top
            # half of a float32).
            bits = np.ascontiguousarray(value).view(np.uint16).astype(np.uint32) << 16
            value = bits.view(np.float32)
        return value

    def _checked_layout(self, dataset: h5py.Dataset, path: str, of: str, bfloat16: bool):
        if dataset.is_virtual:
            raise self.fail(path, f"is a virtual dataset (its data is mapped from other files)"
                                  f"{of}; kerasgl reads nothing outside the model file")
        if dataset.external:
            files = sorted({entry[0] for entry in dataset.external})
            raise self.fail(path, f"uses external storage (its bytes live in {files}){of}; "
                                  "kerasgl reads nothing outside the model file")
        dcpl = dataset.id.get_create_plist()
        filters = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
        unknown = [code for code in filters if code not in _KNOWN_FILTERS]
        if unknown:
            raise self.fail(path, f"is compressed with HDF5 filter(s) {unknown}{of}, which "
                                  "libhdf5 would load a plugin for; kerasgl reads only "
                                  "the built-in filters")
        dtype = dataset.dtype
        if bfloat16:
            if dtype.itemsize != 2 or dtype.kind not in "iuV" or dtype.fields is not None \
                    or dtype.subdtype is not None:
                raise self.fail(path, f"is marked bfloat16 but holds {_describe(dataset)}{of}")
        elif not _is_plain_number(dtype):
            raise self.fail(path, f"holds {_describe(dataset)}, not numbers{of}")
        shape = tuple(int(d) for d in dataset.shape)
        declared = math.prod(shape) * dtype.itemsize
        stored = dataset.id.get_storage_size()
        compressed = any(code in _COMPRESSING_FILTERS for code in filters)
        if stored > self.size:
            raise self.fail(path, f"claims {readable_size(stored)} of storage in a file of "
                                  f"{readable_size(self.size)}")
        if compressed:
            fits = expansion_allowed(declared, stored)
        else:
            fits = declared <= self.size and (declared <= stored or declared <= SMALL_DATASET_BYTES)
        if not fits:
            raise self.fail(path, f"declares shape {shape} of {dtype} ({readable_size(declared)})"
                                  f" but the file holds {readable_size(stored)} of it"
                                  f"{' compressed' if compressed else ''} (file: "
                                  f"{readable_size(self.size)}){of}")
        if dcpl.get_layout() == h5py.h5d.CHUNKED:
            chunk = math.prod(dcpl.get_chunk()) * dtype.itemsize
            if chunk > MAX_CHUNK_BYTES and chunk > declared:
                raise self.fail(path, f"declares chunks of {readable_size(chunk)}, more than "
                                      f"the dataset itself{of}")
        self._declared += declared
        budget = array_budget(self.size)
        if self._declared > budget:
            raise self.fail(path, f"brings the arrays of this file to "
                                  f"{readable_size(self._declared)}, more than the "
                                  f"{readable_size(budget)} a file of "
                                  f"{readable_size(self.size)} can hold{of}")
        return shape, dtype

    # -- attributes -------------------------------------------------------------------------------
    def _strings(self, node, name: str) -> list[str] | None:
        """A string (or list-of-strings) attribute's values; None when absent. An empty numeric
        array counts as an empty list (Keras writes `[]` that way)."""
        path = _attribute_path(node, name)
        with hdf5_errors(self.where(path), "reading an attribute's header"):
            if name not in node.attrs:
                return None
            attr = h5py.h5a.open(node.id, name.encode("utf-8"))
            space, kind = attr.get_space(), attr.get_type()
            if space.get_simple_extent_type() == h5py.h5s.NULL:
                return []
            count = space.get_simple_extent_npoints()
            type_class = kind.get_class()
            if type_class in (h5py.h5t.INTEGER, h5py.h5t.FLOAT) and count == 0:
                return []
            if type_class != h5py.h5t.STRING:
                raise self.fail(path, f"is {_CLASS_NAMES.get(type_class, 'data')}, not text")
            each = 16 if kind.is_variable_str() else kind.get_size()
            if count > MAX_ATTR_STRINGS or count * each > min(self.size, MAX_CONFIG_BYTES):
                raise self.fail(path, f"declares {count} strings of {each} bytes, more than "
                                      "the file holds")
        with hdf5_errors(self.where(path), "reading an attribute"):
            value = node.attrs[name]
            return [as_text(v) for v in np.asarray(value, dtype=object).ravel()]

    def text(self, node, name: str) -> str | None:
        values = self._strings(node, name)
        if values is None:
            return None
        if len(values) != 1:
            raise self.fail(_attribute_path(node, name),
                            f"holds {len(values)} strings where one is expected")
        return values[0]

    def text_list(self, node, name: str) -> list[str] | None:
        """A list-of-strings attribute such as `layer_names` or `weight_names`.

        Keras splits attributes bigger than the 64 KiB HDF5 header limit into `name0`,
        `name1`, ... (keras' legacy_h5_format.save_attributes_to_hdf5_group); those chunks are
        joined here. None when neither the attribute nor its chunks exist."""
        values = self._strings(node, name)
        if values is not None:
            return values
        chunks: list[str] = []
        index = 0
        while True:
            part = self._strings(node, f"{name}{index}")
            if part is None:
                return chunks if index else None
            chunks.extend(part)
            if len(chunks) > MAX_ATTR_STRINGS:
                raise self.fail(_attribute_path(node, name),
                                f"lists more than {MAX_ATTR_STRINGS} names")
            index += 1


_CLASS_NAMES = {h5py.h5t.INTEGER: "an integer", h5py.h5t.FLOAT: "a float",
                h5py.h5t.COMPOUND: "a compound value", h5py.h5t.REFERENCE: "a reference",
                h5py.h5t.ENUM: "an enumeration", h5py.h5t.VLEN: "a variable-length sequence",
                h5py.h5t.ARRAY: "an array", h5py.h5t.OPAQUE: "opaque bytes",
                h5py.h5t.BITFIELD: "a bit field", h5py.h5t.TIME: "a time"}


def _attribute_path(node, name: str) -> str:
    return f"{node.name.rstrip('/')}/@{name}" if node.name == "/" else f"{node.name}@{name}"


def _is_plain_number(dtype: np.dtype) -> bool:
    return (dtype.kind in "fiub" and dtype.fields is None and dtype.subdtype is None
            and dtype.itemsize <= 8 and h5py.check_enum_dtype(dtype) is None)


def _describe(dataset: h5py.Dataset) -> str:
    dtype = dataset.dtype
    if h5py.check_string_dtype(dtype) is not None or dtype.kind in "SU":
        return "strings"
    if h5py.check_ref_dtype(dtype) is not None:
        return "object/region references"
    if h5py.check_vlen_dtype(dtype) is not None:
        return "variable-length sequences"
    if dtype.fields is not None:
        return f"a compound type {dtype}"
    if h5py.check_enum_dtype(dtype) is not None:
        return "an enumeration"
    if dtype.subdtype is not None:
        return f"an array type {dtype}"
    return f"values of type {dtype}"
