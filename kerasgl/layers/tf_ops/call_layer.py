"""The part every layer tf.keras records for a TensorFlow call shares: one recorded call, run
by one TFFunction (functions.py).

The graph hands the layer the shapes of the tensors in the call's first argument (positionally)
and in its keywords (by keyword), in the places the recorded call holds their references; the
layer puts them back into the recorded structure, as values.Sym leaves, and binds the call
(arguments.py). Its outputs' shapes carry their dtypes and, where load can know it, their
values (values.py). When the model runs, the graph calls it with the same structure holding
tensors.

The graph hands layers bool tensors as float32 0 / 1 (compiler/graph.py): each tensor argument
is given back the dtype it had at load before the function runs, and each output is made the
dtype load declared for it.
"""
from __future__ import annotations

from ...errors import KerasGLError, ModelFileError
from ...ops import typed as typed_ops
from ...tensors import ownership
from ..base import Layer
from .arguments import Args, has_refs, map_tensors, substitute, tensors_in
from .functions import lookup
from .values import Sym, shaped


# What Python raises on values of the wrong type or form.
CONFIG_ACCIDENTS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
                    ZeroDivisionError)


class TensorFlowCall(Layer):
    """Base of TFOpLambda, SlicingOpLambda and TensorFlowOpLayer."""
    mask_behaviour = "drops"
    weight_arrays = 0

    def __init__(self, spec, keras_major: int = 2):
        super().__init__(spec, keras_major)
        if len(spec.inbound_nodes) != 1:
            raise self.unsupported(f"a TensorFlow operation layer called "
                                   f"{len(spec.inbound_nodes)} times (tf.keras records each call "
                                   "as a layer of its own)")
        node = spec.inbound_nodes[0]
        self.recorded_args = list(node.args or [])
        self.recorded_kwargs = dict(node.kwargs or {})
        self.function = self.make_function()
        self.in_dtypes: list[str] = []      # each tensor argument's dtype at load, in order
        self.out_dtypes: list[str] = []
        self._planned = None

    # -- what subclasses say ---------------------------------------------------------------------
    def make_function(self):
        """The TFFunction this layer's call runs (refusing one kerasgl does not run)."""
        raise NotImplementedError

    def function_named(self, name: str):
        """The TFFunction of this name, for this layer's recorded call (None: kerasgl has none)."""
        found = lookup(name)
        if found is None:
            return None
        cls, fixed = found
        function = cls(self, name, **fixed)
        function.check_recorded(*self.bound_call(self.recorded_args, self.recorded_kwargs))
        return function

    def bound_call(self, args: list, kwargs: dict):
        """(first argument, keywords) of the function's call, from the recorded structure
        (with Syms or Tensors in the references' places)."""
        return (args[0] if args else None), kwargs

    @property
    def shaders(self):
        return self.function.shaders

    # -- load ------------------------------------------------------------------------------------
    def compute_output_shape(self, *positional, **keyword):
        key = repr((positional, sorted(keyword.items())))
        if self._planned is not None and self._planned[0] == key:
            return self._planned[1]         # planned already (constants uploaded once)
        result = self._plan(positional, keyword)
        self._planned = (key, result)
        return result

    def _plan(self, positional, keyword):
        passed = iter(positional)
        args = [substitute(a, next(passed), Sym) if has_refs(a) else a
                for a in self.recorded_args]
        kwargs = {k: substitute(v, keyword[k], Sym) if has_refs(v) else v
                  for k, v in self.recorded_kwargs.items()}
        try:
            first, kwargs = self.bound_call(args, kwargs)
            self.in_dtypes = [t.dtype for t in tensors_in([first, kwargs])]
            bound = Args.bind(self.function, first, kwargs, loading=True)
            shapes = self.function.plan(bound)
            value = self.function.value(bound)
        except KerasGLError:
            raise
        except CONFIG_ACCIDENTS as exc:
            # The call's recorded arguments are the file's: values of a type or form no
            # TensorFlow call has (a damaged file) are the file's error, named as such.
            raise ModelFileError(f"Layer '{self.name}' ({self.class_name}): tf.{self.function.name}"
                                 f" recorded with arguments it cannot take ({type(exc).__name__}: "
                                 f"{exc}).") from exc
        dtype = self.function.out_dtype
        if isinstance(shapes, list):
            self.out_dtypes = [dtype] * len(shapes)
            values = value if value is not None else [None] * len(shapes)
            return [shaped(s, dtype, v) for s, v in zip(shapes, values)]
        self.out_dtypes = [dtype]
        return shaped(shapes, dtype, value)

    def build(self, *shapes, **keyword_shapes) -> None:
        self.built = True

    # -- predict ---------------------------------------------------------------------------------
    def call(self, *args, **kwargs):
        first, kwargs = self.bound_call(list(args), kwargs)

        def compute():
            result = self._run(first, kwargs)
            outputs = result if isinstance(result, list) else [result]
            typed = [_as_declared(t, d) for t, d in zip(outputs, self.out_dtypes)]
            return typed if isinstance(result, list) else typed[0]
        return ownership.tidy.run(compute)

    def _run(self, first, kwargs):
        """The function on the call's tensors, each with its dtype of load (inside a tidy scope:
        the converted copies go with it)."""
        dtypes = iter(self.in_dtypes)

        def as_loaded(t):
            dtype = next(dtypes)
            return t if t.dtype == dtype else typed_ops.convert(t, dtype)
        first, kwargs = map_tensors([first, kwargs], as_loaded)
        return self.function.run(Args.bind(self.function, first, kwargs, loading=False))


def _as_declared(tensor, dtype: str):
    """The output with the dtype load declared for it (a bool that ran as float32 0 / 1 made bool
    again; bool and int32 share their words)."""
    return tensor if tensor.dtype == dtype else typed_ops.convert(tensor, dtype)

