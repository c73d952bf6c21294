"""The anatomy every kerasgl layer shares, and the registry from Keras class_name to layer class.

A layer is built once, at load time, from its normalised config and its numpy weights; from then on
`call` turns input tensors into output tensors with ops. The contract:

- `__init__(spec, keras_major)`: read the config; raise UnsupportedLayerError for options kerasgl
  cannot honour (never silently ignore one).
- `compute_output_shape(input_shape)`: Keras's rule; shapes are tuples with None for the batch (and
  other unknown) dimensions; the structure follows the call's first argument (a tuple, or a list
  of tuples for layers called on a list). Raise ShapeError naming the layer on bad input.
- `build(input_shape)`: called once, after the shapes are known; prepare and upload the weights
  here with `self.upload(array)` (transposes, folding and packing happen once, here, never in call).
- `call(inputs, **kwargs)`: same signature as the Keras layer's call. Returns a Tensor or a list of
  Tensors. It must not dispose its inputs, and must dispose every temporary it makes.
- `shaders`: the shader files the layer runs, for summary().

Besides the contract, a layer class says what it is, in declarations with defaults here that the
rest of kerasgl reads instead of keeping tables of class names:
- masks (compiler/masks.py): `mask_behaviour` and the facts next to it. A class that declares
  nothing is refused at load when a Keras mask reaches it, never run without it.
- fusions (compiler/fusion.py): the methods under "load-time fusions"; each default declines.
- reading files (saving/): `weight_arrays` / `weight_count`, `normalize_keras2_config` and
  `inference_weights`. saving/ sits below layers/ and cannot import them: `register` enters each
  class in FILE_RULES, which the top of the package hands to saving/layer_rules.py.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFileError, ShapeError, UnsupportedLayerError
from ..saving.spec import LayerSpec
from ..tensors import ownership
from ..tensors.tensor import HALF, Tensor, half_tensor, tensor
from . import keras_api

LAYER_CLASSES: dict[str, type] = {}
# Keras class name -> what reading a file asks about it (saving/layer_rules.py's LayerRules):
# every registered layer class, and the rules of classes kerasgl runs inside a layer (RNN cells).
FILE_RULES: dict[str, "FileRules"] = {}

MASK_BEHAVIOURS = ("pass_through", "consumes", "computes", "drops")
# The mask declarations a stand-in for another layer (compiler/fusion.py's FusedAway) copies.
MASK_FACTS = ("mask_behaviour", "keras_call_takes_mask", "mask_argument", "tensor_arguments",
              "ignores_mask_argument", "keras2_mask_refused", "mask_from", "returns_its_input",
              "erases_input_masks")


def register_in(registry: dict, class_names: tuple):
    """Class decorator entering the class in `registry` under these Keras class names."""
    def decorate(cls):
        for name in class_names:
            if name in registry and registry[name].__qualname__ != cls.__qualname__:
                # One class per Keras name: a second would silently win by import order.
                raise TypeError(f"{name} is registered twice: {registry[name].__module__}."
                                f"{registry[name].__qualname__} and {cls.__module__}.{cls.__qualname__}")
            registry[name] = cls
        cls.keras_class_names = class_names
        return cls
    return decorate


def register(*class_names: str):
    """Class decorator: this kerasgl layer implements these Keras class names. The class also
    becomes what saving/ asks about those names when it reads a file (saving/layer_rules.py)."""
    def decorate(cls):
        if cls.mask_behaviour not in MASK_BEHAVIOURS + (None,):
            raise TypeError(f"{cls.__name__}.mask_behaviour = {cls.mask_behaviour!r}: not one of "
                            f"{MASK_BEHAVIOURS}")
        register_in(LAYER_CLASSES, class_names)(cls)
        declare_file_rules(class_names, cls)
        return cls
    return decorate


def adds_weights(config: dict) -> bool:
    """Options that give any layer arrays beyond those of its class (LoRA, quantization)."""
    return bool(config.get("lora_rank")) or "quantization_mode" in config \
        or bool(config.get("quantization_config"))


class FileRules:
    """What reading a file asks about one Keras class name (saving/layer_rules.py), answered by
    `source`: a layer class, or any class with the three classmethods of Layer's "reading files"
    section. A config with options that add arrays (adds_weights) gets no count and keeps them."""

    def __init__(self, source):
        self.source = source
        self.python_class_name = getattr(source, "keras_python_class", None)

    def weight_count(self, config: dict) -> int | None:
        return None if adds_weights(config) else self.source.weight_count(config)

    def normalize_keras2_config(self, config: dict) -> dict:
        return self.source.normalize_keras2_config(config)

    def inference_weights(self, config: dict, weights: list) -> list:
        return weights if adds_weights(config) else self.source.inference_weights(config, weights)


def declare_file_rules(class_names, source) -> None:
    for name in class_names:
        FILE_RULES[name] = FileRules(source)


def declared_weight_count(class_name, config) -> int | None:
    """The weight count FILE_RULES gives a class name and config (None: no check)."""
    rules = FILE_RULES.get(class_name)
    return rules.weight_count(config) if rules is not None and isinstance(config, dict) else None


class Layer:
    keras_class_names: tuple = ()
    shaders: tuple = ()
    # How the layer stores its large weight matrices on the GPU: load_model's storage_dtype,
    # set on every layer of the model before it is built ("float32" unless asked). The layers
    # whose kernels read halves pass it to upload for those weights (Dense, EinsumDense,
    # Embedding, ReversibleEmbedding, Conv1D/2D and their transposed and separable forms'
    # pointwise kernels); biases, normalisation parameters, depthwise kernels and every other
    # weight stay float32 whatever it says.
    storage_dtype = "float32"

    # -- masks: what this layer does with a Keras mask (compiler/masks.py) ----------------------
    # "pass_through": the values do not depend on a mask; the output carries the input's
    #     (Keras: supports_masking with the default compute_mask).
    # "drops": the values do not depend on a mask; the output carries none.
    # "consumes": call(..., mask=) uses it (see mask_argument); the outputs in masked_outputs()
    #     carry the first input's mask on.
    # "computes": the output's mask is this layer's own: compute_mask() at run time, mask_from
    #     at load.
    # None (undeclared): a mask reaching the layer is refused at load (UnsupportedLayerError).
    mask_behaviour: str | None = None
    # How a "consumes" layer is handed masks: "mask" (one tensor: the first input's mask),
    # "mask_list" (mask=[one per tensor of the list it is called on]) or "per_argument" (Keras 3's
    # `<name>_mask` keywords, one per tensor argument named in tensor_arguments).
    mask_argument = "mask"
    tensor_arguments: tuple = ()
    # Keras 3's call signature has `mask` although the layer does not consume one (it takes it and
    # ignores it, BatchNormalization; or kerasgl refuses it, nested models). A "consumes" layer
    # with mask_argument "mask" / "mask_list" takes it anyway.
    keras_call_takes_mask = False
    # A `mask=` recorded in the file for this layer's call is accepted, and not passed on: the
    # layer's inference result does not depend on it ("pass_through" layers accept one anyway).
    ignores_mask_argument = False
    # tf.keras (Keras 2 files) treats masks differently for this "consumes" layer: refused there.
    keras2_mask_refused = False
    # "computes": "values" (a new mask made from the input's values), "all_inputs" (the inputs'
    # masks combined; none unless every input has one) or "any_input" (none only if no input has one).
    mask_from: str | None = None
    # Keras 3's call returns its input object itself (inference identities): the output *is* the
    # input tensor, sharing its mask and MultiHeadAttention's erasing of it.
    returns_its_input = False
    # Keras 3's call erases the masks of its tensor arguments, in place (MultiHeadAttention).
    erases_input_masks = False

    @property
    def makes_mask(self) -> bool:
        """The layer makes a new mask from its input's values (Masking, Embedding(mask_zero))."""
        return self.mask_behaviour == "computes" and self.mask_from == "values"

    def masked_outputs(self) -> tuple:
        """The outputs that carry the mask on (a layer's later outputs, such as an RNN's states,
        carry none)."""
        return () if self.mask_behaviour in ("drops", None) else (0,)

    def compute_mask(self, inputs, masks: list):
        """"computes" layers: the output's mask as a new float32 0/1 tensor, or None. `inputs` is
        the call's first argument (a tensor, or a list of tensors); `masks` holds one mask or None
        per tensor of it."""
        raise NotImplementedError(f"{type(self).__name__} declares no compute_mask")

    def mask_shape(self, input_shape):
        """mask_from "values": the shape of the mask made from an input of this shape."""
        return input_shape

    def refuses_mask(self, keras_major: int) -> bool:
        """A mask handed to this "consumes" layer that it cannot honour (TimeDistributed around a
        layer that takes masks): refused at load."""
        return False

    def check_mask_shape(self, mask_shape, input_shape) -> None:
        """Raise at load for a mask of this shape (None dims: unknown) that Keras would refuse."""

    # Plain (non-tensor) call options that compute_output_shape and build take by keyword, since
    # the output's shape depends on them (ReversibleEmbedding's reverse=): the graph passes them.
    shape_keywords: tuple = ()

    # -- load-time fusions (compiler/fusion.py calls these before build; each declines, returning
    # False or None and changing nothing, unless the layer overrides it and the result is exact) --
    epilogue = None           # a pointwise activation adopted by fuse_activation (merges)
    # Its call is the sum of its inputs (keras.layers.Add): fusion may move it, with its epilogue,
    # into the convolution producing one of them (absorb_add).
    adds_inputs = False

    def as_pointwise(self, args, kwargs):
        """The pointwise activation (activations.Pointwise) this call computes when it computes
        nothing else, so that the producer of its input can run it in its epilogue."""
        return None

    def as_channel_affine(self):
        """(axis, scale, shift): the per-channel `x * scale + shift` along `axis` this layer
        computes at inference when it computes nothing else (BatchNormalization)."""
        return None

    def zero_padding(self):
        """The (before, after) zeros per spatial axis of a channels-last ZeroPadding."""
        return None

    def pooling(self):
        """(mode, pool_size, strides, padding) of a channels-last pooling with windows."""
        return None

    def output_rank(self):
        """The rank of this layer's output when the layer alone fixes it (spatial layers)."""
        return None

    def fuse_activation(self, pointwise) -> bool:
        """Adopt the pointwise activation applied right after this layer."""
        return False

    def fold_channel_affine(self, scale, shift) -> bool:
        """Fold a per-output-channel `y * scale + shift` applied right after into the weights."""
        return False

    def absorb_zero_padding(self, pads) -> bool:
        """Take over the ZeroPadding applied right before (pads: (before, after) per axis)."""
        return False

    def absorb_max_pool(self, pool_layer) -> bool:
        """Take over the pooling applied right after (pool_layer.pooling() says which)."""
        return False

    def absorb_add(self, epilogue) -> bool:
        """Take over the Add this layer's output goes to (and the Add's epilogue): its other input
        becomes this layer's second input."""
        return False

    def fused_with_activation(self, pointwise):
        """A new layer computing this call and then `pointwise` in one dispatch, put in the
        graph in place of this one (keras.ops binary op nodes)."""
        return None

    def unfused_output_shape(self, input_shape):
        """The output shape Keras reports when a fusion changed what flows (summary()); None:
        what flows."""
        return None

    @property
    def nested_graph(self):
        """The graph a model nested as a layer runs (compiler/graph.py's NestedModel)."""
        return None

    # -- NaN (docs/limitations.md) ------------------------------------------------------------
    @property
    def drops_nan(self) -> bool:
        """True where this layer's GPU kernel may turn a NaN or infinity of its input into a
        finite number where Keras keeps NaN (a convolution's min/max clamp): the model then refuses
        non-finite numpy inputs (compiler/feeding.py) rather than give such an answer."""
        return False

    # -- reading files (saving/layer_rules.py asks these by class name, through FILE_RULES) ------
    # How many weight arrays every config of this class implies; None: not fixed (no check
    # before the layer's own, in __init__ / build).
    weight_arrays: int | None = None
    # The Keras Python class, where it is not the class_name a config gives (Keras exports
    # GroupedQueryAttention as GroupQueryAttention): a .keras file names the weights group after it.
    keras_python_class: str | None = None

    @classmethod
    def weight_count(cls, config: dict) -> int | None:
        """How many weight arrays this config implies, for the check of a file's weights that
        names the layer before any layer code runs; None: no such check."""
        return cls.weight_arrays

    @classmethod
    def normalize_keras2_config(cls, config: dict) -> dict:
        """`config` (a fresh dict, changed in place or replaced) with the spellings of older files
        (Keras 2) of this class's options made Keras 3's. Run on every file's config: a Keras 3
        file has none of them."""
        return config

    @classmethod
    def inference_weights(cls, config: dict, weights: list) -> list:
        """The arrays inference reads, out of those the file holds (the others only train)."""
        return weights

    def __init__(self, spec: LayerSpec, keras_major: int = 3):
        self.spec = spec
        self.name = spec.name
        self.class_name = spec.class_name
        self.config = spec.config
        self.keras_major = keras_major
        self.weights_np: list[np.ndarray] = list(spec.weights)
        self._gpu_weights: list[Tensor] = []
        self.built = False

    # -- helpers for subclasses ------------------------------------------------------------
    def option(self, key, default=None):
        return self.config.get(key, default)

    def unsupported(self, what: str) -> UnsupportedLayerError:
        return UnsupportedLayerError(f"Layer '{self.name}' ({self.class_name}): {what} is not supported.")

    def shape_error(self, message: str) -> ShapeError:
        return ShapeError(f"Layer '{self.name}' ({self.class_name}): {message}")

    def expect_weights(self, count: int) -> None:
        if len(self.weights_np) != count:
            raise ModelFileError(
                f"Layer '{self.name}' ({self.class_name}) expects {count} weight arrays, the file "
                f"has {len(self.weights_np)}.")

    def call_flag(self, name: str) -> bool:
        """The value of a boolean call argument (return_attention_scores) in the layer's calls as
        saved in the file. The graph hands compute_output_shape only the shapes of positional
        tensors, so the number of outputs is read from here; calls that disagree cannot be told
        apart."""
        values = {bool((node.kwargs or {}).get(name, False)) for node in self.spec.inbound_nodes}
        if len(values) > 1:
            raise self.unsupported(f"a layer called both with and without {name}=True "
                                   "(shared between calls that differ in it)")
        return values.pop() if values else False

    def upload(self, array, dtype="float32", name: str | None = None) -> Tensor:
        """Put a prepared weight on the GPU; owned by this layer (exempt from tidy scopes). Its GL
        object is labelled '<layer name>/<name>' ('conv2d_3/weight0' by default) for debuggers.
        dtype "float16" stores it as IEEE halves (tensors/tensor.py half_tensor), for the
        kernels that read them only (ops/half_weights.py): what storage_dtype asks of the
        layer's large weight matrices."""
        label = f"{self.name}/{name or f'weight{len(self._gpu_weights)}'}"
        if dtype == HALF:
            weight = ownership.keep(half_tensor(array, label=label))
        else:
            weight = ownership.keep(tensor(np.ascontiguousarray(array), dtype=dtype, label=label))
        self._gpu_weights.append(weight)
        return weight

    # -- the contract --------------------------------------------------------------------------
    def compute_output_shape(self, input_shape):
        return input_shape

    def build(self, input_shape) -> None:
        self.built = True

    def call(self, inputs, **kwargs):
        raise NotImplementedError

    @property
    def param_count(self) -> int:
        return int(sum(np.prod(w.shape) for w in self.weights_np))

    def dispose(self) -> None:
        for weight in self._gpu_weights:
            weight.dispose()
        self._gpu_weights.clear()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}' ({self.class_name})>"

    # -- the Keras inspection API (keras.layers.Layer's names and semantics; layers/keras_api.py) --
    def get_weights(self) -> list:
        """The layer's weights as keras.layers.Layer.get_weights() returns them: numpy arrays in
        Keras's order and shapes, as the file stores them, not as kerasgl prepared them at load
        (packed, transposed, a BatchNormalization folded into the convolution before it). Copies:
        changing them changes nothing on the GPU."""
        return keras_api.copied(keras_api.stored_weights(self.spec))

    def get_config(self) -> dict:
        """The layer's config as kerasgl read it from the file: Keras's keys and values, both
        Keras dialects in Keras 3's spelling, a dtype policy given as its name (a copy)."""
        return keras_api.layer_config(self.spec)

    def count_params(self) -> int:
        """keras.layers.Layer.count_params(): the scalars of every weight in the file."""
        return keras_api.parameter_count(self.spec)

    def with_wrapped(self) -> list:
        """This layer and the layers it holds (Bidirectional's, TimeDistributed's,
        SpectralNormalization's), at any depth, each once."""
        found, seen = [], {id(self)}
        stack = [self]
        while stack:
            layer = stack.pop()
            found.append(layer)
            for value in vars(layer).values():
                for item in (value if isinstance(value, (list, tuple)) else (value,)):
                    if isinstance(item, Layer) and id(item) not in seen:
                        seen.add(id(item))
                        stack.append(item)
        return found

    def gpu_weights(self) -> list:
        """The weight tensors this layer holds on the GPU, with those of the layers it wraps:
        what dispose() frees. For memory reports."""
        return [w for layer in self.with_wrapped() for w in layer._gpu_weights
                if not w.is_disposed]


class AffineFoldable:
    """Mixin for layers that can take over `y * scale + shift` per output unit applied right after
    them (an inference BatchNormalization), folded into their weights at build. Subclasses give
    `fold_width` (their output units) and `_linear_and_unbuilt()` (no activation of their own yet,
    weights not yet packed: only then is the fold exact up to rounding)."""
    _fold = None      # (scale, shift) of the folded affine map, composed over successive folds
    fold_width = 0

    def _linear_and_unbuilt(self) -> bool:
        raise NotImplementedError

    def fold_channel_affine(self, scale, shift) -> bool:
        scale = np.asarray(scale, np.float32).reshape(-1)
        shift = np.asarray(shift, np.float32).reshape(-1)
        if not self._linear_and_unbuilt() or scale.size != self.fold_width \
                or shift.size != self.fold_width:
            return False
        if self._fold is None:
            self._fold = (scale, shift)
        else:   # (y * s1 + t1) * s2 + t2
            s1, t1 = self._fold
            self._fold = (s1 * scale, t1 * scale + shift)
        return True


class Weightless:
    """File rules of a class that owns no weight arrays and has nothing else to say (layers
    kerasgl refuses at load, such as Lambda)."""

    @staticmethod
    def weight_count(config: dict) -> int:
        return 0

    @staticmethod
    def normalize_keras2_config(config: dict) -> dict:
        return config

    @staticmethod
    def inference_weights(config: dict, weights: list) -> list:
        return weights
