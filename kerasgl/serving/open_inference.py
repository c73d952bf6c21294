"""The Open Inference Protocol ("v2": KServe, Triton, Seldon MLServer) as kerasgl serves it, the
part both of its transports share (HTTP: open_inference_http.py; gRPC: grpc_front.py): its
datatypes, model and server metadata, a request's input tensors made into the model's inputs,
and the outputs a request asked for.

A tensor travels as a datatype ("FP32", "INT32", "BOOL", "BYTES", ...), a shape (the batch
dimension first, as the model's own) and its elements in row-major order: JSON values, a typed
repeated field (gRPC), or raw little-endian bytes (the binary tensor data extension over HTTP,
raw_input_contents over gRPC), where each BYTES element is a 4-byte little-endian length and its
bytes. An input's datatype must be the model's: FP32 for a float32 input, INT32, BOOL, and BYTES
(UTF-8 text) for a text model's string input. Every input is then checked as TF Serving's are
(validation.py), before the request joins a batch.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .. import __version__
from .failures import RequestError
from .validation import check_names, to_arrays

PLATFORM = "kerasgl"
EXTENSIONS = ["binary_tensor_data"]             # Triton's name for the binary data extension
INPUT_DATATYPES = {"float32": "FP32", "int32": "INT32", "bool": "BOOL", "string": "BYTES"}
NUMPY_TYPES = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32,
               "UINT64": np.uint64, "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
               "INT64": np.int64, "FP16": np.float16, "FP32": np.float32, "FP64": np.float64}
_DATATYPES = {np.dtype(t).str: name for name, t in NUMPY_TYPES.items()}
_MAX_RANK = 32


@dataclass
class Tensor:
    """One input tensor of a request, as its transport carried it: `data` holds the elements
    (a numpy array, or JSON values: nested lists or a flat list)."""
    name: str
    datatype: str
    shape: list
    data: object


def datatype_of(dtype) -> str:
    """The protocol's datatype of a numpy dtype (an output's)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "USO":
        return "BYTES"
    return _DATATYPES.get(dtype.newbyteorder("<").str if dtype.byteorder == ">" else dtype.str,
                          "FP32")


def _shape(spec) -> list:
    return [-1 if d is None else int(d) for d in spec.shape]


def _tensor_metadata(name: str, datatype: str, shape: list) -> dict:
    return {"name": name, "datatype": datatype, "shape": shape}


def model_metadata(entry) -> dict:
    """The model metadata response: name, versions, platform, inputs and outputs."""
    inputs = [_tensor_metadata(s.name, INPUT_DATATYPES.get(s.dtype, "FP32"), _shape(s))
              for s in entry.input_specs]
    outputs = [_tensor_metadata(name, INPUT_DATATYPES.get(s.dtype, "FP32"), _shape(s))
               for name, s in zip(entry.output_names, entry.model.outputs)]
    return {"name": entry.name, "versions": [entry.version], "platform": PLATFORM,
            "inputs": inputs, "outputs": outputs}


def server_metadata() -> dict:
    return {"name": "kerasgl", "version": __version__, "extensions": list(EXTENSIONS)}


def find(service, name: str, version: str | None):
    """The served model a request names (service.Service.find), or a 404 in the protocol's
    words."""
    entry = service.find(name, version)
    if entry is None:
        which = f"'{name}'" + (f" version {version}" if version else "")
        raise RequestError(404, f"Request for unknown model: {which} is not served here.")
    return entry


# -------------------------------------------------------------------------------------------------
# Raw bytes
# -------------------------------------------------------------------------------------------------
def from_raw(datatype: str, raw: bytes, what: str) -> np.ndarray:
    """The elements of a tensor sent as raw bytes, flat (BYTES elements as Python bytes; none
    for a datatype the protocol does not have, which the input's own check then names)."""
    if datatype not in NUMPY_TYPES and datatype != "BYTES":
        return np.empty(0)
    if datatype == "BYTES":
        items, offset = [], 0
        while offset < len(raw):
            if offset + 4 > len(raw):
                raise RequestError(400, f"{what}: its BYTES data ends inside an element's length.")
            (size,) = struct.unpack_from("<I", raw, offset)
            offset += 4
            if offset + size > len(raw):
                raise RequestError(400, f"{what}: its BYTES data ends inside an element.")
            items.append(bytes(raw[offset:offset + size]))
            offset += size
        return np.array(items, dtype=object)
    dtype = np.dtype(NUMPY_TYPES[datatype]).newbyteorder("<")
    if len(raw) % dtype.itemsize:
        raise RequestError(400, f"{what}: {len(raw)} bytes of data is not a whole number of "
                                f"{datatype} elements ({dtype.itemsize} bytes each).")
    return np.frombuffer(raw, dtype=dtype)


def to_raw(array: np.ndarray) -> bytes:
    """An output's elements as raw bytes, row-major, little-endian (BYTES: length-prefixed)."""
    if array.dtype.kind in "USO":
        parts = []
        for item in array.ravel():
            data = item if isinstance(item, bytes) else str(item).encode("utf-8")
            parts += [struct.pack("<I", len(data)), data]
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def output_values(array: np.ndarray) -> list:
    """An output's elements as JSON values, flat in row-major order (text as str)."""
    values = array.ravel().tolist()
    if array.dtype.kind in "SO":
        values = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in values]
    return values


# -------------------------------------------------------------------------------------------------
# Inputs and outputs
# -------------------------------------------------------------------------------------------------
def _elements(tensor: Tensor, spec, model_name: str) -> np.ndarray:
    what = f"Input '{tensor.name}' of model '{model_name}'"
    wanted = INPUT_DATATYPES.get(spec.dtype, "FP32")
    if tensor.datatype != wanted:
        raise RequestError(400, f"{what} has datatype {tensor.datatype!r}; the model takes "
                                f"{wanted}.")
    shape = tensor.shape
    if not isinstance(shape, (list, tuple)) or len(shape) > _MAX_RANK or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise RequestError(400, f"{what}: its shape must be a list of sizes (whole numbers "
                                f">= 0), got {shape!r:.200}.")
    try:
        data = np.asarray(tensor.data)
    except (ValueError, TypeError, OverflowError):
        data = None
    if data is None or (data.dtype == object and wanted != "BYTES"):
        raise RequestError(400, f"{what}: its data is not a regular array of {wanted} values.")
    count = int(np.prod(shape, dtype=np.int64))
    if data.size != count:
        raise RequestError(400, f"{what} has shape {list(shape)} ({count} elements) but holds "
                                f"{data.size} values.")
    if wanted == "BYTES" and data.dtype.kind in "SO":
        try:
            data = np.array([v.decode("utf-8") if isinstance(v, bytes) else v
                             for v in data.ravel()])
        except UnicodeDecodeError:
            raise RequestError(400, f"{what} holds bytes that are not UTF-8 text.") from None
    return data.reshape(shape)


def input_arrays(entry, tensors: list) -> list:
    """The model's inputs (in its input order), validated, from a request's Tensors."""
    names = [t.name for t in tensors]
    if len(set(names)) != len(names):
        raise RequestError(400, f"The request names an input twice: {names}.")
    check_names(names, entry.input_names, entry.name, "the request")
    specs = {spec.name: spec for spec in entry.input_specs}
    columns = {t.name: _elements(t, specs[t.name], entry.name) for t in tensors}
    return to_arrays(columns, entry.input_specs, entry.name, entry.max_rows)


def selected_outputs(entry, requested) -> list:
    """The indices of the outputs a request asked for by name, in its order (None or empty:
    every output, in the model's order)."""
    if not requested:
        return list(range(len(entry.output_names)))
    unknown = [name for name in requested if name not in entry.output_names]
    if unknown:
        raise RequestError(400, f"Model '{entry.name}' has no output(s) {unknown}; its outputs "
                                f"are {entry.output_names}.")
    return [entry.output_names.index(name) for name in requested]


def timeout_seconds(value) -> float | None:
    """A request's "timeout" parameter (microseconds, as Triton reads it) in seconds."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise RequestError(400, f'The "timeout" parameter is in microseconds (a number >= 0), '
                                f"got {value!r:.100}.")
    return value / 1e6 if value else None
