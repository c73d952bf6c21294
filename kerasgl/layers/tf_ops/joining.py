"""TensorFlow functions that join tensors or cut one into several: concat, stack, unstack and
split. Joins copy words side by side (word_gather.side_by_side: row r of the output is row r of
each operand in turn, a row being everything before the joined axis), cuts are strided windows
(ops/basic_index.py); float32, int32 and bool alike. Constant operands (`tf.stack([n, 2, 12])`)
are uploaded at load in the tensors' dtype; known values are joined and cut at load too.
"""
from __future__ import annotations

import math

import numpy as np

from ...ops import basic_index
from ...ops.word_gather import side_by_side
from ...tensors.tensor import view
from .arguments import is_tensor
from .functions import TFFunction, known_value, register


def _axis(function, axis, rank: int) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise function.shape_error(f"axis {axis!r} does not fit rank {rank}.")
    return axis % rank


class Join(TFFunction):
    """concat(values, axis) or stack(values, axis) (fixed `stack`)."""
    params = ("values", "axis")
    shaders = ("word_gather.comp",)

    def plan(self, args):
        values = args.get("values")
        values = values if isinstance(values, list) else [values]
        tensors = [v for v in values if is_tensor(v)]
        if not tensors:
            raise self.unsupported("no tensor among the values")
        dtypes = {t.dtype for t in tensors}
        if len(dtypes) != 1:
            raise self.unsupported(f"values of dtypes {sorted(dtypes)}")
        self.out_dtype = dtypes.pop()
        operands = [self.lifted(f"values_{i}", v, True, self.out_dtype, numbers=False)
                    for i, v in enumerate(values)]
        shapes = [tuple(o.shape) for o in operands]
        rank = len(shapes[0]) + (1 if self.fixed["stack"] else 0)
        self.axis = _axis(self, args.static("axis", 0 if self.fixed["stack"] else None), rank)
        if self.fixed["stack"]:
            if len(set(shapes)) != 1 and not any(None in s for s in shapes):
                raise self.shape_error(f"cannot stack shapes {shapes}.")
            return shapes[0][:self.axis] + (len(shapes),) + shapes[0][self.axis:]
        if any(len(s) != rank for s in shapes):
            raise self.shape_error(f"cannot join shapes {shapes}.")
        sizes = [s[self.axis] for s in shapes]
        total = None if None in sizes else sum(sizes)
        return shapes[0][:self.axis] + (total,) + shapes[0][self.axis + 1:]

    def value(self, args):
        values = args.get("values")
        values = values if isinstance(values, list) else [values]
        known = [known_value(v) for v in values]
        if any(k is None for k in known):
            return None
        join = np.stack if self.fixed["stack"] else np.concatenate
        return join(known, axis=self.axis)

    def run(self, args):
        values = args.get("values")
        values = values if isinstance(values, list) else [values]
        operands = [self.lifted(f"values_{i}", v, False, numbers=False)
                    for i, v in enumerate(values)]
        first = operands[0].shape
        rows = math.prod(first[:self.axis])
        joined = side_by_side(operands, rows)
        if self.fixed["stack"]:
            shape = first[:self.axis] + (len(operands),) + first[self.axis:]
        else:
            total = sum(o.shape[self.axis] for o in operands)
            shape = first[:self.axis] + (total,) + first[self.axis + 1:]
        return view(joined, shape)


register(Join, {"concat": {"stack": False}, "stack": {"stack": True}})


class Cut(TFFunction):
    """unstack(value, num, axis) (fixed `unstack`) or split(value, num_or_size_splits, axis):
    one output per piece along `axis`, whose size must be known at load."""
    params = ("value", "num_or_size_splits", "axis", "num")

    def plan(self, args):
        x = args.tensor("value")
        self.out_dtype = x.dtype
        self.axis = _axis(self, args.static("axis", 0), x.ndim)
        size = x.shape[self.axis]
        if size is None:
            raise self.unsupported(f"axis {self.axis} of unknown size")
        if self.fixed["unstack"]:
            sizes = [1] * size
        else:
            splits = args.static("num_or_size_splits")
            if isinstance(splits, int):
                if splits < 1 or size % splits:
                    raise self.shape_error(f"{size} cannot be split into {splits} pieces.")
                sizes = [size // splits] * splits
            else:
                sizes = list(splits)
                if sizes.count(-1) == 1:
                    sizes[sizes.index(-1)] = size - sum(s for s in sizes if s != -1)
                if sum(sizes) != size or any(s < 0 for s in sizes):
                    raise self.shape_error(f"sizes {splits} do not split {size}.")
        starts = np.cumsum([0] + sizes[:-1]).tolist()
        self.windows = [(start, n) for start, n in zip(starts, sizes)]
        keep = not self.fixed["unstack"]
        return [x.shape[:self.axis] + ((n,) if keep else ()) + x.shape[self.axis + 1:]
                for _, n in self.windows]

    def _items(self, start: int, n: int) -> list:
        piece = slice(start, start + n) if not self.fixed["unstack"] else start
        return [slice(None)] * self.axis + [piece]

    def value(self, args):
        x = args.values["value"]
        if x.value is None:
            return None
        return [x.value[tuple(self._items(start, n))] for start, n in self.windows]

    def run(self, args):
        x = args.tensor("value")
        items = [basic_index.expand(self._items(start, n), x.ndim) for start, n in self.windows]
        return [basic_index.take(x, i) for i in items]


register(Cut, {"unstack": {"unstack": True}, "split": {"unstack": False}})
