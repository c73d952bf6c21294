"""TensorFlowOpLayer: how TF 2.0 - 2.3 (and tf-keras with eager execution disabled) recorded a
raw TensorFlow op called on Keras tensors: the op's NodeDef (op, attr) and `constants`, the
values of its inputs that were not Keras tensors, by input position.

The op's inputs are rebuilt in NodeDef order (each position a constant or the next of the
layer's tensors) and the op is read as the TensorFlow function that runs it (`Mul` is
tf.math.multiply, `MirrorPad` tf.pad with its mode, `ResizeBilinear`
tf.compat.v1.image.resize_bilinear with its align_corners / half_pixel_centers), so it runs
through the same tables as a TFOpLambda (functions.py). Attributes come as JSON: strings
base64-encoded ("s"), integers as strings ("i"), booleans ("b"), dtypes ("type": "DT_FLOAT").
An op not in the table below is refused at load, naming it.
"""
from __future__ import annotations

import base64
import binascii

from ..base import register
from .call_layer import TensorFlowCall
from .arguments import tensors_in

_DTYPES = {"DT_FLOAT": "float32", "DT_INT32": "int32", "DT_INT64": "int64", "DT_BOOL": "bool"}


def attr_value(entry):
    """One NodeDef attr as a Python value."""
    if not isinstance(entry, dict):
        return entry
    if "s" in entry:
        try:
            return base64.b64decode(entry["s"]).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, TypeError):
            return entry["s"]
    if "i" in entry:
        return int(entry["i"])
    if "b" in entry:
        return bool(entry["b"])
    if "f" in entry:
        return float(entry["f"])
    if "type" in entry:
        return _DTYPES.get(entry["type"], entry["type"])
    if "list" in entry:
        values = entry["list"]
        return [int(v) for v in values.get("i", [])] or [float(v) for v in values.get("f", [])]
    return None


def _unary(name):
    return name, lambda i, a: (i[0], {})


def _binary(name):
    return name, lambda i, a: (i[0], {"y": i[1]})


def _reduction(name):
    return name, lambda i, a: (i[0], {"axis": i[1], "keepdims": a.get("keep_dims", False)})


def _resize(name, half_pixel=True):
    def call(i, a):
        kwargs = {"size": i[1], "align_corners": a.get("align_corners", False)}
        if half_pixel:
            kwargs["half_pixel_centers"] = a.get("half_pixel_centers", False)
        return i[0], kwargs
    return name, call


def _strided_slice(i, a):
    masks = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
    return i[0], {"begin": i[1], "end": i[2], "strides": i[3],
                  **{m: a.get(m, 0) for m in masks}}


# NodeDef op -> (TensorFlow function, (inputs, attrs) -> (first argument, keywords)).
OPS = {
    **{op: _unary(fn) for op, fn in {
        "Abs": "math.abs", "Neg": "math.negative", "Relu": "nn.relu", "Relu6": "nn.relu6",
        "Elu": "nn.elu", "Selu": "nn.selu", "Softplus": "math.softplus", "Softsign": "nn.softsign",
        "Sqrt": "math.sqrt", "Rsqrt": "math.rsqrt", "Exp": "math.exp", "Log": "math.log",
        "Tanh": "math.tanh", "Sigmoid": "math.sigmoid", "Square": "math.square",
        "Floor": "math.floor", "Ceil": "math.ceil", "Round": "math.round", "Sign": "math.sign",
        "Erf": "math.erf", "Reciprocal": "math.reciprocal", "LogicalNot": "math.logical_not",
        "Softmax": "nn.softmax", "LogSoftmax": "nn.log_softmax"}.items()},
    **{op: _binary(fn) for op, fn in {
        "AddV2": "math.add", "Add": "math.add", "Sub": "math.subtract", "Mul": "math.multiply",
        "RealDiv": "math.truediv", "FloorDiv": "math.floordiv", "FloorMod": "math.floormod",
        "Maximum": "math.maximum", "Minimum": "math.minimum", "Pow": "math.pow",
        "SquaredDifference": "math.squared_difference", "DivNoNan": "math.divide_no_nan",
        "Greater": "math.greater", "GreaterEqual": "math.greater_equal", "Less": "math.less",
        "LessEqual": "math.less_equal", "Equal": "math.equal", "NotEqual": "math.not_equal",
        "LogicalAnd": "math.logical_and", "LogicalOr": "math.logical_or"}.items()},
    **{op: _reduction(f"math.reduce_{fn}") for op, fn in {
        "Mean": "mean", "Sum": "sum", "Max": "max", "Min": "min", "Prod": "prod", "Any": "any",
        "All": "all"}.items()},
    "LeakyRelu": ("nn.leaky_relu", lambda i, a: (i[0], {"alpha": a.get("alpha", 0.2)})),
    "ArgMax": ("math.argmax", lambda i, a: (i[0], {"axis": i[1]})),
    "ArgMin": ("math.argmin", lambda i, a: (i[0], {"axis": i[1]})),
    "ConcatV2": ("concat", lambda i, a: (i[:-1], {"axis": i[-1]})),
    "Pack": ("stack", lambda i, a: (i, {"axis": a.get("axis", 0)})),
    "DepthToSpace": ("nn.depth_to_space", lambda i, a: (
        i[0], {"block_size": a["block_size"], "data_format": a.get("data_format", "NHWC")})),
    "SpaceToDepth": ("nn.space_to_depth", lambda i, a: (
        i[0], {"block_size": a["block_size"], "data_format": a.get("data_format", "NHWC")})),
    "Reshape": ("reshape", lambda i, a: (i[0], {"shape": i[1]})),
    "Transpose": ("transpose", lambda i, a: (i[0], {"perm": i[1]})),
    "ExpandDims": ("expand_dims", lambda i, a: (i[0], {"axis": i[1]})),
    "Squeeze": ("squeeze", lambda i, a: (i[0], {"axis": a.get("squeeze_dims") or None})),
    "Tile": ("tile", lambda i, a: (i[0], {"multiples": i[1]})),
    "Pad": ("pad", lambda i, a: (i[0], {"paddings": i[1]})),
    "PadV2": ("pad", lambda i, a: (i[0], {"paddings": i[1], "constant_values": i[2]})),
    "MirrorPad": ("pad", lambda i, a: (i[0], {"paddings": i[1], "mode": a["mode"]})),
    "StridedSlice": ("strided_slice", _strided_slice),
    "ResizeBilinear": _resize("compat.v1.image.resize_bilinear"),
    "ResizeNearestNeighbor": _resize("compat.v1.image.resize_nearest_neighbor"),
    "ResizeBicubic": _resize("compat.v1.image.resize_bicubic"),
    "ResizeArea": _resize("compat.v1.image.resize_area", half_pixel=False),
    "Einsum": ("einsum", lambda i, a: (a["equation"], {"inputs": list(i)})),
    "MatMul": ("linalg.matmul", lambda i, a: (i[0], {
        "b": i[1], "transpose_a": a.get("transpose_a", False),
        "transpose_b": a.get("transpose_b", False)})),
    "BatchMatMulV2": ("linalg.matmul", lambda i, a: (i[0], {
        "b": i[1], "adjoint_a": a.get("adj_x", False), "adjoint_b": a.get("adj_y", False)})),
    "Cast": ("cast", lambda i, a: (i[0], {"dtype": a.get("DstT")})),
    "Shape": ("shape", lambda i, a: (i[0], {"out_type": a.get("out_type", "int32")})),
}


@register("TensorFlowOpLayer")
class TensorFlowOpLayer(TensorFlowCall):

    def make_function(self):
        node_def = self.option("node_def")
        if not isinstance(node_def, dict) or not isinstance(node_def.get("op"), str):
            raise self.unsupported("a TensorFlowOpLayer without a NodeDef")
        self.op = node_def["op"]
        if self.op not in OPS:
            raise self.unsupported(f"the TensorFlow op {self.op} (kerasgl runs these "
                                   f"TensorFlowOpLayer ops: {', '.join(sorted(OPS))})")
        self.attrs = {k: attr_value(v) for k, v in (node_def.get("attr") or {}).items()}
        self.inputs = [name for name in node_def.get("input", [])
                       if not str(name).startswith("^")]          # "^x": control inputs
        self.constants = {int(k): v for k, v in (self.option("constants") or {}).items()}
        return self.function_named(OPS[self.op][0])

    def bound_call(self, args: list, kwargs: dict):
        tensors = iter(tensors_in(args))
        inputs = []
        for position in range(len(self.inputs)):
            if position in self.constants:
                inputs.append(self.constants[position])
            else:
                value = next(tensors, None)
                if value is None:
                    raise self.unsupported(f"the op {self.op} with fewer tensors than its "
                                           f"NodeDef's {len(self.inputs)} inputs")
                inputs.append(value)
        try:
            return OPS[self.op][1](inputs, self.attrs)
        except (IndexError, KeyError) as exc:
            raise self.unsupported(f"the op {self.op} with inputs {self.inputs} and attributes "
                                   f"{sorted(self.attrs)} ({type(exc).__name__}: {exc})") from None
