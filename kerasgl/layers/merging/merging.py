"""Merging layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, Dot."""
from __future__ import annotations

from ...errors import UnsupportedLayerError
from ...ops import creation, elementwise, merge
from ...tensors import ownership
from ...tensors.tensor import view
from ..base import Layer, register


def _broadcast_dim(a, b):
    if a is None or b is None:
        return a if b == 1 else (b if a == 1 else (a if a is not None else b))
    if a == 1:
        return b
    if b == 1 or a == b:
        return a
    return -1


class _Merge(Layer):
    """Keras's Merge: inputs of lower rank get axes of size 1 inserted at axis 1, then shapes
    broadcast as numpy does."""
    shaders = ("binary.comp",)
    op = "add"
    epilogue = None     # a pointwise activation adopted by fusion.py (applied in the last dispatch)
    mask_behaviour = "computes"
    mask_from = "all_inputs"
    weight_arrays = 0

    def compute_mask(self, inputs, masks):
        """Keras's Merge.compute_mask: the OR of the inputs' masks; none unless every input has
        one."""
        return _or_masks(masks)

    def fuse_activation(self, pointwise) -> bool:
        """Adopt a pointwise activation (activations.Pointwise) applied right after this merge:
        computed in the epilogue of the merge's last dispatch. False (nothing changed) when there
        is none to adopt or one was adopted already."""
        if pointwise is None or (self.epilogue is not None and not self.epilogue.is_identity):
            return False
        self.epilogue = pointwise
        return True

    def _expanded(self, shapes):
        max_rank = max(len(s) for s in shapes)
        return [(s[0],) + (1,) * (max_rank - len(s)) + tuple(s[1:]) if len(s) < max_rank else tuple(s)
                for s in shapes]

    def compute_output_shape(self, input_shape):
        shapes = list(input_shape)
        if len(shapes) < (2 if self.op == "subtract" else 1):
            raise self.shape_error(f"expects a list of at least "
                                   f"{2 if self.op == 'subtract' else 1} inputs. Received {len(shapes)}.")
        if self.op == "subtract" and len(shapes) != 2:
            raise self.shape_error(f"expects exactly 2 inputs. Received {len(shapes)}.")
        shapes = self._expanded(shapes)
        out = shapes[0]
        for s in shapes[1:]:
            dims = tuple(_broadcast_dim(a, b) for a, b in zip(out, s))
            if -1 in dims:
                raise self.shape_error(f"inputs of shapes {[tuple(x) for x in input_shape]} cannot "
                                       "be broadcast together.")
            out = dims
        return out

    def call(self, inputs, **kwargs):
        inputs = list(inputs)
        self.compute_output_shape([t.shape for t in inputs])
        targets = self._expanded([t.shape for t in inputs])
        return ownership.tidy.run(lambda: merge.nary(
            self.op, [view(t, s) for t, s in zip(inputs, targets)], self.epilogue))


def _merge_class(name, op, **facts):
    cls = type(name, (_Merge,), {"op": op, "__doc__": f"keras.layers.{name}: elementwise {op}.",
                                 **facts})
    return register(name)(cls)


Add = _merge_class("Add", "add", adds_inputs=True)
Subtract = _merge_class("Subtract", "subtract")
Multiply = _merge_class("Multiply", "multiply")
Average = _merge_class("Average", "average")
Maximum = _merge_class("Maximum", "maximum")
Minimum = _merge_class("Minimum", "minimum")


@register("Concatenate")
class Concatenate(Layer):
    shaders = ("concat.comp",)
    mask_behaviour = "computes"
    mask_from = "any_input"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.axis = int(self.option("axis", -1))

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        rank = len(shapes[0])
        if any(len(s) != rank for s in shapes) or not -rank <= self.axis < rank:
            raise self.shape_error(f"expects inputs of one rank with axis {self.axis} in range. "
                                   f"Received input shapes {shapes}.")
        axis = self.axis % rank
        out = list(shapes[0])
        for s in shapes[1:]:
            for d in range(rank):
                if d == axis:
                    continue
                if s[d] is not None and out[d] is not None and s[d] != out[d]:
                    raise self.shape_error(f"needs all dimensions but axis {self.axis} to match. "
                                           f"Received input shapes {shapes}.")
                out[d] = out[d] if out[d] is not None else s[d]
        sizes = [s[axis] for s in shapes]
        out[axis] = None if None in sizes else sum(sizes)
        return tuple(out)

    def call(self, inputs, **kwargs):
        return merge.concatenate(list(inputs), self.axis)

    def compute_mask(self, inputs, masks):
        """Keras's Concatenate.compute_mask for (batch, time) masks of rank-3 inputs: along the
        last axis, the OR of the masks (an unmasked input counts as all ones); along time, the
        masks joined."""
        inputs = list(inputs)
        rank = inputs[0].ndim
        axis = self.axis + rank if self.axis < 0 else self.axis

        def compute():
            filled = [m if m is not None else creation.fill(t.shape[:2], 1.0)
                      for t, m in zip(inputs, masks)]
            if axis == rank - 1 and rank > 2:
                if any(m is None for m in masks):
                    return creation.fill(inputs[0].shape[:2], 1.0)
                return _or_masks(filled)
            if axis == 1:
                return merge.concatenate(filled, axis=1)
            raise UnsupportedLayerError(
                f"Layer '{self.name}' (Concatenate): masks of inputs joined along axis "
                f"{self.option('axis')} are not supported.")
        return ownership.tidy.run(compute)


@register("Dot")
class Dot(Layer):
    shaders = ("matmul.comp", "l2_normalize.comp")
    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        axes = self.option("axes")
        self.axes = int(axes) if isinstance(axes, int) else tuple(int(a) for a in axes)
        self.normalize = bool(self.option("normalize", False))

    def _axes(self, shapes):
        if isinstance(self.axes, int):
            return [self.axes % len(s) for s in shapes] if self.axes < 0 else [self.axes] * 2
        return [a % len(s) if a < 0 else a for a, s in zip(self.axes, shapes)]

    def compute_output_shape(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        if len(shapes) != 2:
            raise self.shape_error(f"expects a list of 2 inputs. Received {len(shapes)}.")
        a0, a1 = self._axes(shapes)
        if shapes[0][a0] is not None and shapes[1][a1] is not None and shapes[0][a0] != shapes[1][a1]:
            raise self.shape_error(f"axis {a0} of the first input ({shapes[0][a0]}) and axis {a1} of "
                                   f"the second ({shapes[1][a1]}) differ. Input shapes {shapes}.")
        return merge.batch_dot_shape(shapes[0], shapes[1], (a0, a1))

    def call(self, inputs, **kwargs):
        x1, x2 = inputs
        axes = self._axes([x1.shape, x2.shape])
        if not self.normalize:
            return merge.batch_dot(x1, x2, axes)
        return ownership.tidy.run(lambda: merge.batch_dot(
            merge.l2_normalize(x1, axes[0]), merge.l2_normalize(x2, axes[1]), axes))


def _or_masks(masks):
    """The OR (maximum) of 0/1 masks as a new tensor; None if any is None."""
    if any(m is None for m in masks):
        return None

    def merged():
        out = view(masks[0], masks[0].shape)
        for m in masks[1:]:
            out = elementwise.binary("maximum", out, m)
        return out
    return ownership.tidy.run(merged)
