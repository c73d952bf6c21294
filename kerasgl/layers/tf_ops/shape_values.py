"""tf.shape and tf.range: tensors made from sizes rather than from another tensor's values.

tf.shape(x) is int32 (int64 in TensorFlow: kerasgl's int32) and known at load but for x's
batch size (values.Batch) and other sizes unknown there; when the model runs it is uploaded
from x's actual shape. tf.range's bounds must be known at load (a range whose length follows
the batch size has a shape no layer after it could be checked against): it is a constant,
computed as TensorFlow's kernel does (start, then delta added again and again).
"""
from __future__ import annotations

import math

import numpy as np

from ...tensors.tensor import tensor, view
from .functions import TFFunction, register
from .values import Batch


class Shape(TFFunction):
    params = ("input", "out_type", "name")

    def plan(self, args):
        x = args.tensor("input")
        if str(args.get("out_type", "int32")) not in ("int32", "int64"):
            raise self.unsupported(f"out_type={args.get('out_type')!r}")
        self.out_dtype = "int32"
        self.known = [Batch() if i == 0 and d is None else d for i, d in enumerate(x.shape)]
        return (x.ndim,)

    def value(self, args):
        return np.array(self.known, dtype=object)

    def run(self, args):
        return tensor(np.asarray(args.tensor("input").shape, dtype=np.int32), dtype="int32",
                      label="shape")


register(Shape, ["shape"])


class Range(TFFunction):
    params = ("start", "limit", "delta", "dtype", "name")

    def plan(self, args):
        start, limit = args.static("start"), args.static("limit", None)
        delta = args.static("delta", 1)
        if limit is None:
            start, limit = 0, start
        bounds = (start, limit, delta)
        if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in bounds) or not delta:
            raise self.unsupported(f"start={start!r}, limit={limit!r}, delta={delta!r}")
        dtype = args.get("dtype")
        floats = any(isinstance(v, float) for v in bounds)
        self.out_dtype = {None: "float32" if floats else "int32", "float32": "float32",
                          "int32": "int32", "int64": "int32"}.get(dtype)
        if self.out_dtype is None:
            raise self.unsupported(f"dtype={dtype!r}")
        kind = np.float32 if self.out_dtype == "float32" else np.int64
        start, limit, delta = (kind(v) for v in bounds)
        count = max(0, math.ceil((float(limit) - float(start)) / float(delta)))
        values = np.empty(count, kind)
        value = start
        for i in range(count):       # TensorFlow's kernel: val += delta, again and again
            values[i] = value
            value = kind(value + delta)
        self.values = values
        words = np.float32 if self.out_dtype == "float32" else np.int32
        self.constant = self.layer.upload(values.astype(words), dtype=self.out_dtype,
                                          name="range")
        return (count,)

    def value(self, args):
        return np.array(self.values.tolist(), dtype=object)

    def run(self, args):
        return view(self.constant, self.constant.shape)


register(Range, ["range"])
