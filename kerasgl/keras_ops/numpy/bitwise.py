"""keras.ops on the bits and values of int32 / bool / float32 tensors: bitwise and / or / xor /
invert, shifts, gcd / lcm (shaders/bitwise.comp), isclose, isin, angle and isreal of real
tensors, saturate_cast and array (casts), unravel_index with a constant shape, and cdist.

Result dtypes are Keras's (JAX backend); tests/test_op_nodes_remaining.py checks each against
live Keras.
"""
from __future__ import annotations

import math

import numpy as np

from ...layers.refusals import refuse_ops
from ...layers.typed_shapes import promote
from ...ops import bitwise, creation, layout, reduce
from ...ops import typed as typed_ops
from ...tensors import ownership
from ...tensors.tensor import retag
from ..node import (BroadcastingOp, OpNode, _shape, broadcast_dims, checked_operand, register_op,
                    requested_dtype)

refuse_ops({
    "AllClose": "it reduces over the whole tensor, batch dimension included, so its answer "
                "would depend on how predict splits the batch",
    "Polar": "its result is complex, and kerasgl has no complex tensors",
})



_BITWISE = {"BitwiseAnd": "and", "BitwiseOr": "or", "BitwiseXor": "xor",
            "BitwiseLeftShift": "shl", "LeftShift": "shl",
            "BitwiseRightShift": "shr", "RightShift": "shr", "Gcd": "gcd", "Lcm": "lcm"}


_BOOL_OK = ("and", "or", "xor")       # of two bools: a bool, as Keras


@register_op(*_BITWISE)
class BitwiseOp(BroadcastingOp):
    """and / or / xor / shifts / gcd / lcm of int32 tensors and Python ints (jnp's semantics:
    XLA's shifts by a count outside [0, 32) give 0, or the sign's fill for the arithmetic right
    shift; gcd and lcm of absolute values). and / or / xor of bools give a bool, of a bool and an
    int32 an int32 (the bool as 0 / 1). Float arguments are refused (jnp refuses them)."""
    params = ("x", "y")
    shaders = ("bitwise.comp",)

    def bind(self, args, kwargs):
        if self.class_name in ("Gcd", "Lcm"):
            kwargs = {{"x1": "x", "x2": "y"}.get(k, k): v for k, v in kwargs.items()}
        return super().bind(args, kwargs)

    def output_shape(self, bound):
        return broadcast_dims(_shape(bound["x"]), _shape(bound["y"]), f"Layer '{self.name}'")

    def result_dtype(self, bound, dtypes):
        op = _BITWISE[self.class_name]
        kinds = [checked_operand(self, bound[k], k) for k in ("x", "y")]
        if "float32" in kinds:
            raise self.unsupported(f"{self.class_name} of a float32 argument (jnp takes "
                                   "integers and bools only)")
        if "bool" in kinds and op not in _BOOL_OK:
            raise self.unsupported(f"{self.class_name} of a bool argument (int32 only here)")
        return promote(*kinds)

    def run(self, bound):
        dtype = self.result_dtype(bound, set())
        return bitwise.binary(_BITWISE[self.class_name], bound["x"], bound["y"], dtype)


@register_op("BitwiseInvert", "BitwiseNot")
class BitwiseInvertOp(OpNode):
    """~x: every bit of an int32 flipped; of a bool, its negation (a bool)."""
    shaders = ("bitwise.comp",)

    def result_dtype(self, bound, dtypes):
        dtype = checked_operand(self, bound["x"], "x")
        if dtype == "float32":
            raise self.unsupported("bitwise_invert of a float32 argument (jnp refuses it)")
        return dtype

    def run(self, bound):
        x = bound["x"]
        return bitwise.binary("xor", x, 1 if x.dtype == "bool" else -1, x.dtype)


def _as_float(value):
    """A float32 operand: an int32 / bool tensor converted (a new tensor, the caller's tidy scope
    frees it), a number as a float."""
    return typed_ops.as_float(value)[0]


@register_op("Isclose")
class IscloseOp(BroadcastingOp):
    """isclose(x1, x2, rtol, atol) -> bool, in float32 (int and bool arguments converted, as jnp
    promotes them): x1 == x2, or x2 finite and |x1 - x2| <= atol + rtol * |x2|; NaN is close to
    NaN only with equal_nan."""
    params = ("x1", "x2", "rtol", "atol")
    shaders = ("bitwise.comp", "typed_unary.comp")
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x1"], "x1")
        checked_operand(self, bound["x2"], "x2")
        for key in ("rtol", "atol"):
            if not isinstance(self.opt(bound, key, 0.0), (int, float)):
                raise self.unsupported(f"a non-number {key}")
        return "bool"

    def run(self, bound):
        return ownership.tidy.run(lambda: bitwise.binary(
            "isclose", _as_float(bound["x1"]), _as_float(bound["x2"]), "bool",
            rtol=self.opt(bound, "rtol", 1e-5), atol=self.opt(bound, "atol", 1e-8),
            equal_nan=self.options.get("equal_nan", False)))


@register_op("Angle")
class AngleOp(OpNode):
    """angle of a real tensor (kerasgl has no complex ones): arctan2(0, x), pi where x's sign
    bit is set (-0.0 and -inf too), 0 elsewhere, NaN kept; float32 of any argument."""
    shaders = ("bitwise.comp", "typed_unary.comp")

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x"], "x")
        return "float32"

    def run(self, bound):
        return ownership.tidy.run(
            lambda: bitwise.binary("angle", _as_float(bound["x"]), 0.0, "float32"))


@register_op("Isreal")
class IsrealOp(OpNode):
    """isreal of a real tensor (kerasgl has no complex ones): True everywhere."""
    shaders = ("fill.comp",)
    output_dtype = "bool"

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x"], "x")
        return "bool"

    def run(self, bound):
        return ownership.tidy.run(
            lambda: retag(creation.fill(bound["x"].shape, 1, "int32"), "bool"))


@register_op("Array")
class ArrayOp(OpNode):
    """array(x, dtype): a copy of x, cast to dtype where one is given (float32 / int32 / bool)."""
    shaders = ("typed_unary.comp",)

    def result_dtype(self, bound, dtypes):
        dtype = checked_operand(self, bound["x"], "x")
        return requested_dtype(self, (self.config or {}).get("dtype"), allow_none=True) or dtype

    def run(self, bound):
        return typed_ops.convert(bound["x"], self.result_dtype(bound, set()))


@register_op("IsIn")
class IsInOp(OpNode):
    """isin(x1, x2): whether each element of x1 equals any element of x2 (compared in the common
    dtype; NaN equals nothing), or equals none with invert. x2 is a constant (an array saved in
    the model); a model tensor x2 would mix the elements of every sample in the batch: refused."""
    params = ("x1", "x2")
    shaders = ("typed_binary.comp", "typed_unary.comp", "reduce.comp", "fill.comp")
    output_dtype = "bool"
    MAX_ELEMENTS = 64

    def elements(self, bound):
        x2 = bound["x2"]
        if isinstance(x2, (list, tuple, np.ndarray, bool, int, float)):
            values = np.asarray(x2).ravel()
            if values.dtype.kind not in "biuf":
                raise self.unsupported(f"test elements of dtype {values.dtype}")
            if values.size > self.MAX_ELEMENTS:
                raise self.unsupported(f"more than {self.MAX_ELEMENTS} test elements")
            return [v.item() for v in values]
        return None

    def result_dtype(self, bound, dtypes):
        checked_operand(self, bound["x1"], "x1")
        if self.elements(bound) is None:
            shape = _shape(bound["x2"])
            if None in shape:
                raise self.unsupported("test elements that are a model tensor (jnp.isin would "
                                       "compare with the elements of every sample in the batch)")
            checked_operand(self, bound["x2"], "x2")
        return "bool"

    def output_shape(self, bound):
        return _shape(bound["x1"])

    def run(self, bound):
        x, invert = bound["x1"], bool(self.options.get("invert", False))
        values = self.elements(bound)

        def compute():
            if values is None and bound["x2"].size:
                found = self.any_equal(x, bound["x2"])
            elif not values:                   # no test elements: nothing is in them
                return retag(creation.fill(x.shape, 1 if invert else 0, "int32"), "bool")
            else:
                found = None
                for v in values:
                    v = float(v) if isinstance(v, float) or x.dtype == "float32" else v
                    hit = typed_ops.binary("eq", x, v, "bool")
                    if found is not None:
                        merged = typed_ops.binary("or", found, hit, "bool")
                        # Freed at once: one running result, not two tensors per element.
                        ownership.dispose((found, hit))
                        hit = merged
                    found = hit
            return typed_ops.unary("int_not", found, "bool") if invert else found
        return ownership.tidy.run(compute)

    @staticmethod
    def any_equal(x, elements):
        """Whether each element of x equals any of the tensor `elements` (bool)."""
        def compute():
            column = layout.reshape(x, tuple(x.shape) + (1,))
            flat = layout.reshape(elements, (elements.size,))
            hits = typed_ops.binary("eq", column, flat, "bool")
            any_hit = reduce.reduce("max", typed_ops.convert(hits, "float32"), axis=-1)
            return typed_ops.convert(any_hit, "bool")
        return ownership.tidy.run(compute)


@register_op("UnravelIndex")
class UnravelIndexOp(OpNode):
    """unravel_index(indices, shape): one int32 tensor per dimension of the constant shape, as
    jnp computes it (indices clipped to [-size, size - 1], negative ones counted from the end)."""
    params = ("indices",)
    shaders = ("typed_binary.comp",)
    output_dtype = "int32"

    def dims(self):
        shape = self.options.get("shape")
        shape = (shape,) if isinstance(shape, int) else tuple(shape or ())
        if not shape or not all(isinstance(d, int) and d > 0 for d in shape):
            raise self.unsupported(f"shape={shape!r} (positive integers are needed)")
        if math.prod(shape) >= 2 ** 31:
            raise self.unsupported(f"shape={shape!r} (more elements than int32 indexes)")
        return shape

    def result_dtype(self, bound, dtypes):
        if checked_operand(self, bound["indices"], "indices") != "int32":
            raise self.unsupported("indices that are not int32")
        self.dims()
        return "int32"

    def output_shape(self, bound):
        return [_shape(bound["indices"])] * len(self.dims())

    def run(self, bound):
        dims = self.dims()
        size = math.prod(dims)

        def compute():
            low = typed_ops.binary("maximum", bound["indices"], -size, "int32")
            high = typed_ops.binary("minimum", low, size - 1, "int32")
            flat = typed_ops.binary("mod", high, size, "int32")
            outputs, stride = [], size
            for d in dims:
                stride //= d
                quotient = typed_ops.binary("floordiv", flat, stride, "int32")
                outputs.append(typed_ops.binary("mod", quotient, d, "int32"))
            return outputs
        return ownership.tidy.run(compute)
