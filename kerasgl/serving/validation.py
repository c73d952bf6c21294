"""Each request's inputs checked against the model before the request joins a batch, so that a bad
request fails alone (400, naming the input and what it should be) and never spoils the batch it
would have joined: the model's dtype (numbers for float32 inputs; whole numbers in int32's range
for int32 ones; true / false for bool ones; strings for a text model's string inputs; no ragged
lists), the model's shape (the batch dimension free), every
value finite (NaN and Infinity are valid JSON tokens for TF Serving, not valid model inputs, and
a float64 too large for float32 would become one), the same number of examples in every input,
and at most as many examples as one batch holds.
"""
from __future__ import annotations

import numpy as np

from .failures import RequestError

_INT32 = np.iinfo(np.int32)


def shape_text(spec) -> str:
    return "[" + ", ".join("-1" if d is None else str(d) for d in spec.shape) + "]"


def to_array(value, spec, model_name: str) -> np.ndarray:
    """The JSON value of one input's whole batch as an array of the input's dtype, or a 400."""
    what = f"Input '{spec.name}' of model '{model_name}'"
    expected = f"{shape_text(spec)} {spec.dtype} (-1: any size)"
    try:
        array = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        array = None
    if array is None or array.dtype == object:
        raise RequestError(400, f"{what} is not a regular array of numbers (rows of different "
                                f"lengths, or values that are not numbers); expected {expected}.")
    # What each input dtype takes in JSON: strings (text models' lookup layers), true / false,
    # or numbers; anything else is a 400 naming the input.
    kinds, takes = {"string": ("U", "strings"), "bool": ("b", "true / false values")}.get(
        spec.dtype, ("iuf", "numbers"))
    if array.dtype.kind not in kinds:
        held = "strings" if array.dtype.kind in "USV" else f"{array.dtype} values"
        raise RequestError(400, f"{what} holds {held}; it takes {takes}, shape {expected}.")
    if array.ndim != len(spec.shape) or any(
            want is not None and got != want for got, want in zip(array.shape[1:], spec.shape[1:])):
        raise RequestError(400, f"{what} has shape {list(array.shape)}; the model expects "
                                f"{expected}.")
    if spec.dtype in ("string", "bool"):
        return np.ascontiguousarray(array)
    if spec.dtype == "int32":
        if array.dtype.kind == "f":
            raise RequestError(400, f"{what} holds non-integer numbers; it takes int32, shape "
                                    f"{expected}.")
        if array.size and (array.min() < _INT32.min or array.max() > _INT32.max):
            raise RequestError(400, f"{what} holds numbers outside int32's range.")
        return np.ascontiguousarray(array, dtype=np.int32)
    converted = np.ascontiguousarray(array, dtype=np.float32)
    if not np.isfinite(converted).all():
        where = [int(i) for i in np.argwhere(~np.isfinite(converted))[0]]
        raise RequestError(400, f"{what} holds NaN or infinity (first at index {where}, or a number "
                                f"too large for float32); every value must be finite.")
    return converted


def to_arrays(columns: dict, specs: list, model_name: str, max_rows: int | None) -> list:
    """Every input as an array, in the model's input order; the batch size checked to be the same
    in each, at least 1, and at most `max_rows` (None: no limit)."""
    arrays = [to_array(columns[spec.name], spec, model_name) for spec in specs]
    rows = {spec.name: (a.shape[0] if a.ndim else 0) for spec, a in zip(specs, arrays)}
    if len(set(rows.values())) > 1:
        raise RequestError(400, f"The inputs of model '{model_name}' must hold the same number of "
                                f"examples; they hold {rows}.")
    count = next(iter(rows.values()))
    if count < 1:
        raise RequestError(400, f"The request holds no examples for model '{model_name}'.")
    if max_rows is not None and count > max_rows:
        raise RequestError(400, f"The request holds {count} examples; model '{model_name}' takes at "
                                f"most {max_rows} per request (the largest batch, "
                                "--max-batch-size).")
    return arrays


def check_names(given, names: list[str], model_name: str, where: str) -> None:
    """A 400 unless `given` (a dict or list of input names) names each input exactly."""
    missing = [n for n in names if n not in given]
    extra = [k for k in given if k not in names]
    if missing or extra:
        said = []
        if missing:
            said.append(f"lacks input(s) {missing}")
        if extra:
            said.append(f"names {extra}, not input(s) of the model")
        raise RequestError(400, f"{where[0].upper()}{where[1:]} {' and '.join(said)}; model "
                                f"'{model_name}' takes inputs {names}.")
