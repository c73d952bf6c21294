"""kg.load_model and the Model object: predict, summary, inspection, and the weights' lifetime.

    with kg.load_model("model.keras") as model:
        y = model.predict(x)                         # numpy in, numpy out
        a, b = model.predict(x, outputs=["conv1", "dense_2"])   # inner layers' outputs

Loading builds every layer, infers every shape and uploads every weight once; a load that fails
for any reason frees whatever it had uploaded. predict frees each intermediate tensor as soon as
its last consumer has run; from the third call at an input shape it replays a compiled execution
plan (plans/) whose shared buffers the model keeps for the next call. Between calls the GPU holds
the weights and the plans of the last few input shapes (memory().planned_bytes), no more.
"""
from __future__ import annotations

import dataclasses
import math
import os
import sys

import numpy as np

from .runtime import context, tuning
from .tensors import model_registry, ownership
from .errors import (DisposedError, GPULimitError, InputTypeError, InputValueError, KerasGLError,
                     ShapeError)
from .compiler.feeding import (DEFAULT_BATCH_SIZE, Progress, arrange_inputs, batch_count,
                               batch_slice, check_batch_size, check_input, check_verbose,
                               concat_batches, fixed_batch_size, has_stateful_layer,
                               nan_dropping_layer, wanted_outputs)
from .compiler.layer_errors import NOT_ABOUT_THE_FILE, with_prefix
from .compiler.graph import Graph, NestedModel, TensorSpec
from .compiler.masks import prepare_graph
from .compiler import host_stage
from .saving.assets import layer_asset
from .compiler.summary import format_summary
from . import saving
from .plans import ModelPlans, PlanInfo
from .saving.spec import ModelSpec, TensorRef
from .tensors.tensor import SPLIT_ADVICE, Tensor, tensor as upload, view
from .model_api import KerasModelAPI
from .model_memory import ModelMemory
from .layers.base import FILE_RULES, Layer
from .ops import half_activations, half_weights
from .layers.custom import custom_layer as custom_layers
from .saving import layer_rules

# Reading a file asks the layer classes what it needs to know (weight counts, Keras 2 spellings);
# saving/ cannot import layers/, so the top of the package connects them (saving/layer_rules.py).
layer_rules.install(FILE_RULES)

# Model formats of other top-level features, asked before the Keras readers: each takes a path
# (and load_model's storage_dtype, by keyword) and returns a loaded model, or None for a file not
# in its format (kerasgl/kerashub/ adds KerasHub's .keras files and preset folders; this module
# does not import it).
MODEL_FORMATS: list = []


def load_model(path, worker=None, custom_objects=None, storage_dtype="float32",
               activation_dtype="float32") -> "Model":
    """Load a Keras model file (.keras, Keras 3 or Keras 2 .h5; the format is read from the file's
    bytes) and upload its weights. Raises ModelFileError for a damaged or foreign file and
    UnsupportedLayerError listing every layer kerasgl cannot run. With `worker` (a kg.Worker) the
    model is loaded on the worker's thread and any thread may call its predict (a WorkerModel).
    `custom_objects` maps the Keras class names of custom layers to kerasgl layer classes
    (subclasses of kg.CustomLayer; docs/custom_layers.md), as keras.models.load_model's does.
    `storage_dtype`: how the large weight matrices are stored on the GPU. "float32" (default)
    keeps every weight as the file has it; "float16" stores Dense and EinsumDense kernels,
    Conv1D/Conv2D kernels (transposed and separable convolutions' pointwise kernels too) and
    Embedding tables as IEEE halves: about half the weights' GPU memory and traffic, while the
    arithmetic stays float32 (the weights are rounded, not the sums). Biases, normalisation
    parameters, depthwise kernels and activations stay float32. Results then differ from Keras's
    by the rounding of the weights: docs/float16.md measures it per application model. Any other
    value raises InputValueError; a weight beyond float16's range (65504) raises it at load.
    `activation_dtype`: how predict keeps the tensors between layers. "float32" (default), or
    "float16": IEEE halves in textures, half the activations' memory and traffic, the arithmetic
    float32 (each layer's output is rounded to the nearest half); the model's outputs come back
    as float32 numbers, the halves they were. Independent of storage_dtype (both "float16" for
    a model stored as halves throughout); model.activation_dtype changes it later. Results then
    differ from Keras's by the rounding of the activations: docs/float16.md."""
    path = model_path(path)
    storage_dtype = check_storage_dtype(storage_dtype)
    activation_dtype = check_activation_dtype(activation_dtype)
    if worker is not None and custom_objects:
        raise TypeError("load_model(worker=..., custom_objects=...) is not supported")
    if worker is not None:           # (its load_model checks the GPU there: it owns the context)
        return worker.load_model(path, storage_dtype=storage_dtype,
                                 activation_dtype=activation_dtype)
    half_activations.check_supported(activation_dtype)      # before anything is uploaded
    for load_format in MODEL_FORMATS:
        model = load_format(path, storage_dtype=storage_dtype)
        if model is not None:
            if activation_dtype != "float32":
                model.activation_dtype = activation_dtype
            return model
    spec = saving.read_model(path)
    # The device policy's per-model hooks, or None (kerasgl/devices/policy.py; on llvmpipe a
    # helper process then compiles the shaders from the last layer backwards meanwhile). The
    # helper loads the file as float32, so it would compile the float32 variants of the
    # convolution and matmul kernels (and those writing float32 activations): not started for
    # another storage or activation dtype.
    hooks = (context.policy().model_loaded(path, spec, _compiled_with)
             if storage_dtype == "float32" and activation_dtype == "float32" else None)
    try:
        with custom_layers.using(custom_objects):
            model = Model.from_spec(spec, storage_dtype=storage_dtype)
    except BaseException:
        if hooks is not None:
            hooks.model_disposed()
        raise
    model._device_hooks = hooks
    model.activation_dtype = activation_dtype
    return model


def check_storage_dtype(value, what: str = "storage_dtype",
                        allowed=half_weights.STORAGE_DTYPES) -> str:
    """load_model's storage_dtype as its name, "float32" or "float16" (a numpy dtype or type
    naming one is taken too); InputValueError naming anything else."""
    try:
        name = value if isinstance(value, str) else np.dtype(value).name
    except TypeError:
        name = None
    if name not in allowed:
        raise InputValueError(f"load_model: {what}={value!r} is not supported; it takes "
                              f"{' or '.join(repr(d) for d in allowed)}.")
    return name


def check_activation_dtype(value) -> str:
    """load_model's activation_dtype as its name, "float32" or "float16"; InputValueError
    naming anything else."""
    return check_storage_dtype(value, "activation_dtype", half_activations.ACTIVATION_DTYPES)


def model_path(path, what: str = "load_model") -> str:
    """A model file's path as a str: a str, an os.PathLike, or bytes (decoded as open() does).
    InputTypeError for anything else (None, a number, a list), InputValueError for a NUL."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str):
        raise InputTypeError(f"{what} takes the path of a .keras or .h5 file (a str, bytes or "
                             f"os.PathLike); received {type(path).__name__} {path!r:.80}.")
    if not path or "\0" in path:
        raise InputValueError(f"{what}: the path {path!r:.200} is empty or holds a NUL character.")
    return path


def _compiled_with() -> list:
    """What a model's compiled programs depend on besides its file: the device, kerasgl's version
    and the kernel choices (a device policy may note a file as compiled here)."""
    # The package's version, read when asked: kerasgl/__init__ sets it after importing this module.
    version = sys.modules[__package__].__version__
    return [tuning.device_key(), version, dataclasses.astuple(tuning.current())]


def load_model_from_json(architecture, weights_path, storage_dtype="float32",
                         activation_dtype="float32") -> "Model":
    """A model from `model.to_json()` output (a JSON string or a path to it) plus a weights file
    (`model.save_weights()`); storage_dtype and activation_dtype as load_model's."""
    weights_path = model_path(weights_path, "load_model_from_json")
    storage_dtype = check_storage_dtype(storage_dtype)
    activation_dtype = check_activation_dtype(activation_dtype)
    half_activations.check_supported(activation_dtype)      # before anything is uploaded
    spec = saving.load_weights_into(saving.read_architecture_json(architecture), weights_path)
    model = Model.from_spec(spec, storage_dtype=storage_dtype)
    model.activation_dtype = activation_dtype
    return model


class Model(KerasModelAPI, ModelMemory):
    """A loaded Keras model whose weights live on the GPU until dispose()."""

    def __init__(self, graph: Graph, spec: ModelSpec, storage_dtype: str = "float32"):
        self._graph = graph
        self._spec = spec
        self._storage_dtype = storage_dtype
        self._disposed = False
        self._plans = ModelPlans(graph, spec.name)     # compiled predict calls (kerasgl/plans/)
        self._device_hooks = None                      # set by load_model (devices/policy.py)
        self._finite_inputs_for = nan_dropping_layer(graph)   # docs/limitations.md
        # A fixed input batch binds only a model carrying states (compiler/feeding.py).
        self._carries_states = has_stateful_layer(graph)
        # kg.memory().models, kg.live_models(), kg.shutdown() (which disposes what is left).
        model_registry.register(self)

    @classmethod
    def from_spec(cls, spec: ModelSpec, storage_dtype: str = "float32") -> "Model":
        """Build, check and upload a model from its normalised description (saving/spec.py);
        its large weight matrices stored as `storage_dtype` asks (load_model's)."""
        storage_dtype = check_storage_dtype(storage_dtype)
        before = {id(t) for t in ownership.live_tensors()}
        graph = None
        try:
            graph = Graph.from_spec(spec)
            if storage_dtype != Layer.storage_dtype:
                _store_weights_as(graph, storage_dtype)     # before any layer is built
            host_stage.split(graph, layer_asset)    # lookup / text layers run on the CPU first
            graph.infer()
            _prepare_masks_everywhere(graph)
            return cls(graph, spec, storage_dtype)
        except BaseException as exc:
            if graph is not None:
                graph.dispose()
            # Belt and braces: anything uploaded during this load that a layer did not register
            # as its own weight is freed too, so a failed load leaves the GPU as it found it.
            for t in ownership.live_tensors():
                if id(t) not in before:
                    t.dispose()
            if isinstance(exc, KerasGLError) and not isinstance(exc, NOT_ABOUT_THE_FILE) \
                    and spec.source not in str(exc):
                # Layers and ops check configs and weights without knowing the file: the same
                # kind of error, naming the file (compiler/layer_errors.py names the layer).
                renamed = with_prefix(exc, f"{spec.source}: ")
                if renamed is not None:
                    raise renamed from exc
            raise

    # -- lifetime ---------------------------------------------------------------------------------
    def dispose(self) -> None:
        """Free every weight on the GPU now. Disposing twice is harmless."""
        if not self._disposed:
            # From the wrong thread this raises GLContextError before anything is marked or
            # freed, so a later dispose() on the owning thread still frees everything.
            context.get_context()
            if self._device_hooks is not None:
                self._device_hooks.model_disposed()
            self._plans.dispose()
            self._graph.dispose()
            self._disposed = True

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    def _check_alive(self) -> None:
        if self._disposed:
            raise DisposedError(f"Model '{self.name}' is disposed: its weights were freed from the "
                                "GPU. Load it again to use it.")

    def __enter__(self) -> "Model":
        self._check_alive()
        return self

    def __exit__(self, exc_type, exc, tb):
        self.dispose()
        return False

    # -- description ------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._spec.name

    @property
    def source(self) -> str:
        return self._spec.source

    @property
    def keras_major(self) -> int:
        return self._spec.keras_major

    @property
    def storage_dtype(self) -> str:
        """How the large weight matrices are stored on the GPU: load_model's storage_dtype
        ("float32" or "float16"; docs/float16.md)."""
        return self._storage_dtype

    @property
    def activation_dtype(self) -> str:
        """How predict keeps the tensors between layers: "float32", or "float16" (IEEE halves in
        textures; load_model's activation_dtype, docs/float16.md). Setting it frees the
        execution plans recorded the other way."""
        return self._plans.activation_dtype

    @activation_dtype.setter
    def activation_dtype(self, value) -> None:
        self._check_alive()
        value = check_activation_dtype(value)
        half_activations.check_supported(value)
        if value != self._plans.activation_dtype:
            self._plans.clear()
            self._plans.activation_dtype = value

    @property
    def inputs(self) -> list[TensorSpec]:
        """Name, shape (None for any size) and dtype of each input, in order."""
        return host_stage.model_inputs(self._graph)

    @property
    def outputs(self) -> list[TensorSpec]:
        return self._graph.output_specs

    @property
    def input_shape(self):
        shapes = [s.shape for s in self.inputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def output_shape(self):
        shapes = [s.shape for s in self.outputs]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def layers(self) -> list:
        """The layers as keras.Model.layers lists them (a Sequential's InputLayer left out)."""
        return list(self._graph.listed_layers)

    def get_layer(self, name: str | None = None, index: int | None = None):
        """A layer by name, or by position in `layers`, as keras.Model.get_layer."""
        if index is not None:
            if name is not None:
                raise InputValueError("Provide only a layer name or a layer index, not both.")
            layers = self.layers
            if not -len(layers) <= index < len(layers):
                raise InputValueError(f"Model '{self.name}' has {len(layers)} layers; index "
                                      f"{index} is out of range.")
            return layers[index]
        layer = self._graph.layers.get(name)
        if layer is None:
            raise InputValueError(f"No such layer: {name!r}. Existing layers are: "
                                  f"{list(self._graph.layers)}.")
        return layer

    def reset_states(self) -> None:
        """Forget the states that stateful recurrent layers carry between predict calls (as
        keras.Model.reset_states): the next call starts from zeros."""
        self._check_alive()
        for layer in _stateful_layers(self._graph):
            layer.reset_states()

    def count_params(self) -> int:
        """Every weight in the file (trainable or not), as keras.Model.count_params()."""
        return self._graph.param_count

    # -- predict ----------------------------------------------------------------------------------
    def predict(self, x, batch_size: int | None = None, verbose="auto", outputs=None):
        """Run the model on `x`, as keras.Model.predict.

        x: an array (one-input model), a list of arrays in input order or a dict by input name;
        numpy arrays (or anything np.asarray takes) or kerasgl Tensors.
        batch_size: samples per GPU run; default 32 for numpy inputs. Tensor inputs run as one
        batch unless batch_size is given (they are already on the GPU, so one run saves copies).
        verbose: "auto" (a progress bar when stderr is a terminal and there are several batches),
        0, 1 (bar) or 2 (one line at the end).
        outputs: None for the model's outputs, or the names of layers whose outputs to return
        instead (a name; a list of names; `(name, node_index)` or `(name, node_index,
        tensor_index)` for a layer called several times or with several outputs).

        Returns one array for a single output, else a list (a dict for a model built with dict
        outputs); Tensors (owned by the current tidy scope) when any input is a Tensor.
        """
        self._check_alive()
        batch_size = check_batch_size(batch_size)
        check_verbose(verbose)
        wanted, single = wanted_outputs(self._graph, outputs, self.name)
        specs = self.inputs
        values = [check_input(v, s, self.name, self._finite_inputs_for)
                  for v, s in zip(arrange_inputs(x, specs, self.name, self._spec.input_keys), specs)]
        count = batch_count(values, self.name)
        batch_size = fixed_batch_size(specs, batch_size, count, self.name, self._carries_states)
        if any(isinstance(v, Tensor) for v in values):
            results = self._predict_tensors(values, wanted, count, batch_size, verbose)
        else:
            results = self._predict_arrays(values, wanted, count, batch_size or DEFAULT_BATCH_SIZE,
                                           verbose)
        if self._device_hooks is not None:
            self._device_hooks.first_predict_done()      # its programs are all compiled now
            self._device_hooks = None
        if outputs is None and self._spec.output_keys and len(self._spec.output_keys) == len(results):
            return dict(zip(self._spec.output_keys, results))   # a model built with dict outputs
        return results[0] if single else results

    def _predict_arrays(self, arrays, wanted, count, batch_size, verbose) -> list[np.ndarray]:
        # A batch whose largest tensor would not fit in one shader storage buffer (128 MiB on
        # llvmpipe: 32 MobileNetV2 images at 224) runs as several smaller GPU batches.
        batch_size = min(batch_size, self._largest_fitting_batch())
        steps = max(1, math.ceil(count / batch_size))
        progress = Progress(steps, verbose)
        dtypes = [s.dtype for s in self._graph.input_specs]    # what the GPU part takes
        parts: list[list[np.ndarray]] = [[] for _ in wanted]
        start = 0
        while True:
            stop = min(count, start + batch_size)
            try:
                # A compiled plan when one exists for this shape, else eager execution (plans/).
                outs = self._plans.predict_arrays(
                    host_stage.run(self._graph, [a[start:stop] for a in arrays]), dtypes, wanted)
            except GPULimitError as exc:
                # A tensor inside a layer (not seen by shape inference) was still too large.
                if stop - start <= 1:
                    raise self._one_sample_too_large(exc, arrays) from exc
                batch_size = max(1, (stop - start) // 2)
                continue
            for i, out in enumerate(outs):
                parts[i].append(out)
            start = stop
            progress.update(min(steps, math.ceil(start / batch_size)))
            if start >= count:
                break
        return [p[0] if len(p) == 1 else host_stage.concatenate(p, self.name) for p in parts]

    def _one_sample_too_large(self, exc: GPULimitError, inputs) -> GPULimitError:
        """The error of a batch of one sample that still exceeds a GPU limit, with advice that
        fits it: no batch is smaller."""
        fact = str(exc).removesuffix(SPLIT_ADVICE)
        shapes = ", ".join(str(list(x.shape[1:])) for x in inputs)
        return GPULimitError(
            f"Model '{self.name}' cannot run even one sample (input shape {shapes}) on this GPU: "
            f"{fact} Use smaller inputs (a lower resolution, shorter sequences) or a GPU with "
            "larger limits.")

    def _largest_fitting_batch(self) -> int:
        """The most samples per GPU run for which every tensor of the graph whose only unknown
        dimension is the batch fits in one shader storage buffer. Worked out once per set of
        inferred shapes (every predict asks; a ResNet50 has ~180 of them)."""
        shapes = self._graph.shapes
        cached = getattr(self, "_fitting_batch", None)
        if cached is not None and cached[0] is shapes:
            return cached[1]
        limit = context.limits().max_ssbo_block_bytes
        largest = 0
        for shape in shapes.values():
            if shape and shape[0] is None and all(d is not None for d in shape[1:]):
                largest = max(largest, 4 * math.prod(shape[1:]))
        fitting = max(1, limit // largest) if largest else 2 ** 31
        self._fitting_batch = (shapes, fitting)
        return fitting

    def _predict_tensors(self, values, wanted, count, batch_size, verbose) -> list[Tensor]:
        host_stage.refuse_tensors(self._graph, self.name)
        if batch_size is None and count > self._largest_fitting_batch():
            batch_size = self._largest_fitting_batch()    # one run would exceed a buffer's limit

        def run():
            inputs = [v if isinstance(v, Tensor) else upload(v, dtype=s.dtype)
                      for v, s in zip(values, self.inputs)]
            if batch_size is None or batch_size >= count:
                return self._plans.predict_tensors(inputs, wanted)
            buffers = [t if t.storage == "buffer" else t.to_buffer() for t in inputs]
            steps = math.ceil(count / batch_size)
            progress = Progress(steps, verbose)
            parts: list[list[Tensor]] = [[] for _ in wanted]
            for step in range(steps):
                start, stop = step * batch_size, min(count, (step + 1) * batch_size)
                # A scope per batch: its slices are freed before the next batch is cut.
                outs = ownership.tidy.run(lambda: self._plans.predict_tensors(
                    [batch_slice(t, start, stop) for t in buffers], wanted))
                for i, out in enumerate(outs):
                    parts[i].append(out)
                progress.update(step + 1)
            results = [concat_batches(p) for p in parts]
            ownership.dispose(parts)          # (a layer may hand back a kept tensor)
            return results
        # The tidy function form frees every temporary (uploads, slices, batches) and hands the
        # results to the caller's scope.
        try:
            results = ownership.tidy.run(run)
        except GPULimitError as exc:
            if min(count, batch_size or count) > 1:
                raise
            raise self._one_sample_too_large(exc, values) from exc
        return [_owned_by_scope(t) for t in results]

    # -- execution plans ----------------------------------------------------------------------------
    @property
    def use_plans(self) -> bool:
        """Whether predict compiles and replays execution plans (default True; the environment
        variable KERASGL_PLANS=0 turns them off). Turning them off frees the plans at once."""
        return self._plans.enabled

    @use_plans.setter
    def use_plans(self, value: bool) -> None:
        self._plans.enabled = bool(value)
        if not value:
            self._plans.clear()

    @property
    def plan_cache_size(self) -> int:
        """How many input shapes (x requested outputs) keep their execution plan between calls
        (default 3). Each plan holds GL buffers for the intermediates of its shape (56 MB for
        MobileNetV2 at batch 8): a service that sees many batch sizes bounds its memory with
        this. Setting it lower frees the oldest plans at once; at least 1 (turn plans off with
        use_plans = False). docs/memory.md."""
        return self._plans.capacity

    @plan_cache_size.setter
    def plan_cache_size(self, value: int) -> None:
        self._check_alive()
        self._plans.capacity = value

    def release_plans(self) -> None:
        """Free the GL buffers of every execution plan of this model now, keeping the model (its
        weights stay on the GPU). The next calls at a shape record and compile its plan again;
        memory().planned_bytes drops by this model's share."""
        self._check_alive()
        self._plans.clear()

    def plan_info(self) -> list[PlanInfo]:
        """What predict knows about each recent input shape: planned (with its memory: planned
        bytes, peak live bytes, the naive sum), still recording, or eager and why (plans/)."""
        self._check_alive()
        return self._plans.info()

    def warm_up(self, batch_size: int = 1, max_calls: int = 12) -> PlanInfo | None:
        """Predict on zeros at this batch size until predict has reached its steady speed for it:
        its shaders compiled, and every execution plan that a predict of this batch size uses
        recorded and compiled, on llvmpipe with its worker placement chosen (about 9 calls:
        plans/, devices/llvmpipe/). A batch too large for one GPU run is split by predict into
        sub-batches, each with a plan of its own: all of them are warmed. For a service whose
        first requests must not be the slow ones. Returns the plan_info() entry of the batch's
        first GPU run (the whole batch when it is not split; None when plans are off). Raises
        ShapeError for an input with a free dimension other than the batch (a variable sequence
        length: warm up with predict on a real input instead)."""
        self._check_alive()
        batch_size = check_batch_size(batch_size)
        shapes = []
        for spec in self.inputs:
            if any(d is None for d in spec.shape[1:]):
                raise ShapeError(f"Model '{self.name}' input '{spec.name}' has shape {spec.shape}: "
                                 "only the batch dimension may be free to warm up on zeros.")
            shapes.append((int(batch_size), *spec.shape[1:]))
        zeros = [np.zeros(shape, "U1" if spec.dtype == "string" else spec.dtype)   # "": strings
                 for shape, spec in zip(shapes, self.inputs)]
        infos: list[PlanInfo] = []
        for _ in range(max_calls):
            # The plans this call used: one per GPU run's shape (sub-batches of a split batch).
            with self._plans.tracking() as used:
                self.predict(zeros if len(zeros) > 1 else zeros[0], batch_size=batch_size,
                             verbose=0)
            infos = self._plans.info(used)
            if all(i.status != "recording" and not i.placement.startswith("trying")
                   for i in infos):
                break
        return infos[0] if infos else None

    # -- summary ----------------------------------------------------------------------------------
    def summary(self, print_fn=None, expand_nested: bool = False, line_length: int | None = None):
        """Print the layers, their output shapes, parameter counts and the shaders they run."""
        self._check_alive()
        text = format_summary(self, expand_nested=expand_nested, line_length=line_length)
        (print_fn or print)(text)

    def __repr__(self) -> str:
        state = "disposed" if self._disposed else f"{len(self.layers)} layers"
        return f"<kerasgl.Model '{self.name}' ({self._spec.kind}, {state})>"


def _owned_by_scope(t: Tensor) -> Tensor:
    """A layer may hand back a kept tensor (exempt from scopes); predict's results always belong
    to the caller's current scope, so such a tensor is exchanged for a plain view of it."""
    if not t._kept:
        return t
    plain = view(t, t.shape)
    t.dispose()
    return plain


def _store_weights_as(graph: Graph, storage_dtype: str) -> None:
    """Set storage_dtype on every layer of the graph before it is built: nested models' layers,
    and the layers that wrappers hold (Layer.with_wrapped). Each layer keeps its own: models
    loaded with different storage dtypes share nothing."""
    graphs = [graph]
    while graphs:
        for layer in graphs.pop().layers.values():
            if not isinstance(layer, Layer):
                continue
            for held in layer.with_wrapped():
                if isinstance(held, NestedModel):
                    graphs.append(held.graph)
                else:
                    held.storage_dtype = storage_dtype


def _prepare_masks_everywhere(graph: Graph) -> None:
    prepare_graph(graph)
    for layer in graph.layers.values():
        if isinstance(layer, NestedModel):
            _prepare_masks_everywhere(layer.graph)


def _stateful_layers(graph: Graph):
    for layer in graph.layers.values():
        if isinstance(layer, NestedModel):
            yield from _stateful_layers(layer.graph)
        elif hasattr(layer, "reset_states"):
            yield layer


def _dispose_live_models() -> None:
    """kg.shutdown(): the models not yet disposed go before the tensors and the programs
    (runtime/context.py: its last registered release runs first)."""
    for model in model_registry.live_models():
        model.dispose()


context.on_shutdown(_dispose_live_models)
context.on_shutdown(tuning.reset)     # the next context may be another device's
