"""MultiHeadAttention: Keras's layer at inference, every option.

The inputs are turned into the layout of ops/attention.py — query (G, T, N, H), key (G, S, N, H),
value (G, S, N, Hv), batch-like dimensions folded into G — which is a free view for the usual
rank-3 inputs; the fused masked softmax and the weighted sum run there, and the results are
viewed back in Keras's shapes.

Masks. An explicit `attention_mask=` arrives as the call argument Keras records in the model
file. Masks that Keras propagates implicitly (from Embedding(mask_zero=True) or Masking) are
handed in by the graph as `query_mask=` / `value_mask=` / `key_mask=` (compiler/masks.py). A
mask is a tensor (int32 from bool inputs, or float32); a position is kept where it is nonzero.

What a masked score becomes depends on the Keras code path, and a fully masked row shows it:
- Keras 3 on rank-3 inputs, without dropout and without returning scores, calls the fused
  dot_product_attention: masked logits become -0.7 * float32 max, so a fully masked row averages
  every value.
- Otherwise (scores returned, dropout configured, other ranks) it applies its Softmax layer with
  the mask: masked logits become -1e9 and masked weights are zeroed after, so a fully masked row
  gives zeros (the output is then the output projection's bias).
- Keras 2 (tf.keras) adds -1e9 to masked logits and never zeroes.
"""
from __future__ import annotations

import math

import numpy as np

from ...errors import ModelFileError
from ...ops import attention as attn_ops
from ...ops import elementwise, layout, matmul
from ...tensors import ownership
from ...tensors.tensor import Tensor, tensor, view
from .. import config_values
from ..base import Layer, register

KERAS_SOFTMAX_MASK_FILL = -1e9                                  # keras.layers.Softmax with a mask
DOT_PRODUCT_ATTENTION_FILL = float(-0.7 * np.finfo(np.float32).max)  # jax backend's _apply_masks


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        return None


def _merge_masks(layer: Layer, masks: list):
    """AND of the masks (each a Tensor broadcastable to the others), as one tensor. A single mask
    is returned as it is; several are merged on the GPU into a float32 tensor of their broadcast
    shape (the caller's tidy scope frees the steps)."""
    masks = [m for m in masks if m is not None]
    if not masks:
        return None
    if len(masks) == 1:
        return masks[0]
    shape = _broadcast(*[m.shape for m in masks])
    if shape is None:
        raise layer.shape_error(f"masks of shapes {[list(m.shape) for m in masks]} do not "
                                "broadcast together.")
    merged = attn_ops.mask_and(masks[0], masks[1], shape)
    for extra in masks[2:]:
        merged = attn_ops.mask_and(merged, extra, shape)
    return merged


def _mask_as_gnts(layer: Layer, mask: Tensor, scores_shape, groups) -> Tensor:
    """A mask broadcastable to Keras's score shape, seen as broadcastable to the kernel's
    (G, N, T, S): `groups` lists, for G, N, T and S, the score axes each one folds. When the mask
    varies along only some axes of one group it cannot be folded, and is broadcast in full."""
    if mask.ndim > len(scores_shape):
        raise layer.shape_error(f"a mask of shape {list(mask.shape)} has more dimensions than the "
                                f"attention scores {list(scores_shape)}.")
    padded = (1,) * (len(scores_shape) - mask.ndim) + tuple(mask.shape)
    if _broadcast(padded, scores_shape) != tuple(scores_shape):
        raise layer.shape_error(f"a mask of shape {list(mask.shape)} does not broadcast to the "
                                f"attention scores {list(scores_shape)}.")
    folded = []
    for axes in groups:
        varying = [padded[a] != 1 for a in axes if scores_shape[a] != 1]
        if any(varying) and not all(varying):
            full = attn_ops.mask_and(mask, None, scores_shape)
            return view(full, tuple(math.prod(scores_shape[a] for a in axes) for axes in groups))
        folded.append(math.prod(padded[a] for a in axes))
    return view(mask, folded)


def _causal_numpy(q_len: int, v_len: int, window: int | None, causal: bool) -> np.ndarray:
    """Keras's (1, T, S) causal and / or sliding-window mask, as float32 0/1."""
    rows = np.arange(q_len)[:, None]
    cols = np.arange(v_len)[None, :]
    keep = np.ones((q_len, v_len), bool)
    if causal:
        keep &= rows >= cols
    if window is not None:
        keep &= np.abs(rows - cols) < window
    return keep.astype(np.float32)[None]


@register("MultiHeadAttention")
class MultiHeadAttention(Layer):
    """Keras's MultiHeadAttention at inference, every option: heads, key/value dims, biases,
    output_shape, attention_axes (one or several), key defaulting to value, attention_mask,
    use_causal_mask, sliding_window, use_gate, return_attention_scores. Dropout is the identity."""
    shaders = ("matmul.comp", "attention_softmax.comp", "attention_combine.comp")
    # Keras 3 hands it query_mask / value_mask / key_mask, and its call erases those masks on the
    # tensors (set_keras_mask(x, None)); tf.keras treats them differently: refused there.
    mask_behaviour = "consumes"
    mask_argument = "per_argument"
    tensor_arguments = ("query", "value", "key")
    erases_input_masks = True
    keras2_mask_refused = True

    def __init__(self, spec, keras_major: int = 3):
        super().__init__(spec, keras_major)
        self.num_heads = config_values.positive_int(self, "num_heads")
        self.key_dim = config_values.positive_int(self, "key_dim")
        self.value_dim = config_values.optional_positive_int(self, "value_dim") or self.key_dim
        self.use_bias = config_values.flag(self, "use_bias", True)
        self.use_gate = config_values.flag(self, "use_gate", False)
        self.dropout = float(self.option("dropout", 0.0) or 0.0)
        window = self.option("sliding_window")
        self.sliding_window = int(window) if window is not None else None
        axes = self.option("attention_axes")
        if isinstance(axes, int):
            axes = [axes]
        self.attention_axes_config = tuple(int(a) for a in axes) if axes is not None else None
        out_shape = self.option("output_shape")
        if isinstance(out_shape, int):
            out_shape = [out_shape]
        self.output_shape_config = tuple(int(d) for d in out_shape) if out_shape else None
        self.returns_scores = self.call_flag("return_attention_scores")
        self._check_weights()

    # -- weights -----------------------------------------------------------------------------
    def _projection_names(self):
        names = ["query", "key"] + (["gate"] if self.use_gate else []) + ["value", "output"]
        return names

    def _check_weights(self):
        names = self._projection_names()
        per = 2 if self.use_bias else 1
        self.expect_weights(len(names) * per)
        self.np_weights = {}
        for i, name in enumerate(names):
            kernel = self.weights_np[i * per]
            bias = self.weights_np[i * per + 1] if self.use_bias else None
            self.np_weights[name] = (kernel, bias)
        N, H, Hv = self.num_heads, self.key_dim, self.value_dim
        expected = {"query": (N, H), "key": (N, H), "gate": (N, Hv), "value": (N, Hv)}
        for name, tail in expected.items():
            if name not in self.np_weights:
                continue
            kernel, bias = self.np_weights[name]
            if kernel.ndim != 3 or kernel.shape[1:] != tail or (bias is not None and bias.shape != tail):
                raise ModelFileError(
                    f"Layer '{self.name}' (MultiHeadAttention): the {name} projection's weights "
                    f"{[w.shape for w in self.np_weights[name] if w is not None]} do not match "
                    f"num_heads={N}, key_dim={H}, value_dim={Hv}.")
        kernel, bias = self.np_weights["output"]
        if kernel.shape[:2] != (N, Hv):
            raise ModelFileError(f"Layer '{self.name}' (MultiHeadAttention): output kernel of shape "
                                 f"{kernel.shape} does not match num_heads={N}, value_dim={Hv}.")
        self.out_tail = tuple(kernel.shape[2:])
        if self.output_shape_config and self.out_tail != self.output_shape_config:
            raise ModelFileError(f"Layer '{self.name}' (MultiHeadAttention): output kernel of shape "
                                 f"{kernel.shape} does not match output_shape="
                                 f"{list(self.output_shape_config)}.")

    def build(self, *shapes, **kwargs):
        # Kernels are folded to 2-D once: (dim, N, H) -> (dim, N*H), (N, Hv, *out) -> (N*Hv, out).
        self.gpu = {}
        for name, (kernel, bias) in self.np_weights.items():
            rows = kernel.shape[0] if name != "output" else kernel.shape[0] * kernel.shape[1]
            k2 = kernel.reshape(rows, -1).astype(np.float32)
            b1 = bias.reshape(-1).astype(np.float32) if bias is not None else None
            self.gpu[name] = (self.upload(k2), self.upload(b1) if b1 is not None else None)
        self.built = True

    # -- shapes ------------------------------------------------------------------------------
    def _axes_for_rank(self, rank: int) -> tuple:
        """The attention axes of the projected tensors (rank + 1 dims: ..., N, H), normalised as
        Keras does, checked against the input rank."""
        proj_rank = rank + 1
        if self.attention_axes_config is None:
            axes = tuple(range(1, proj_rank - 2))
        else:
            axes = tuple(a if a >= 0 else (proj_rank - 1) + a for a in self.attention_axes_config)
        if not axes or any(not 1 <= a <= proj_rank - 3 for a in axes) or len(set(axes)) != len(axes):
            raise self.shape_error(f"attention_axes {list(self.attention_axes_config or ())} do not "
                                   f"fit inputs of rank {rank} (axes must lie between the batch "
                                   "axis and the feature axis).")
        return tuple(axes)

    def _bind_shapes(self, args, kwargs):
        names = ("query", "value", "key")
        bound = dict(zip(names, args))
        for name in names:
            if kwargs.get(name) is not None:
                bound[name] = kwargs[name]
        if bound.get("query") is None or bound.get("value") is None:
            raise self.shape_error("the graph gave no query or value shape (a call whose query / "
                                   "value are keyword arguments needs the graph to pass keyword "
                                   "shapes).")
        # No key shape: either the call has none (key is value) or the graph passed only the
        # positional shapes; the key is then checked when the layer is called.
        return bound["query"], bound["value"], bound.get("key")

    def compute_output_shape(self, *args, return_attention_scores=None, **kwargs):
        query, value, key = self._bind_shapes(args, kwargs)
        self._check_shapes(tuple(query), tuple(value), None if key is None else tuple(key))
        tail = self.output_shape_config or self.out_tail
        out = tuple(query[:-1]) + tuple(tail)
        returns = self.returns_scores if return_attention_scores is None else bool(return_attention_scores)
        if not returns:
            return out
        axes = self._axes_for_rank(len(query))
        batch = [d for d in range(len(query) - 1) if d not in axes]
        scores = tuple(query[d] for d in batch) + (self.num_heads,) + \
            tuple(query[a] for a in axes) + tuple(value[a] for a in axes)
        return [out, scores]

    def _check_shapes(self, query, value, key):
        rank = len(query)
        if rank < 3 or len(value) != rank or (key is not None and len(key) != rank):
            raise self.shape_error(f"expects query, value and key of one rank >= 3. Received "
                                   f"query {query}, value {value}, key {key}.")
        dims = {"query": query, "value": value}
        if key is not None:
            dims["key"] = key
        for name, shape in dims.items():
            expected = self.np_weights[name][0].shape[0]
            if shape[-1] is not None and shape[-1] != expected:
                raise self.shape_error(f"expects a {name} with last dimension {expected}. Received "
                                       f"{name} shape {shape}.")
        if key is not None and tuple(value[1:-1]) != tuple(key[1:-1]):
            raise self.shape_error(f"value and key must match in every dimension but the last. "
                                   f"Received value {value} and key {key}.")
        axes = self._axes_for_rank(rank)
        for d in range(1, rank - 1):
            if d not in axes and None not in (query[d], value[d]) and query[d] != value[d]:
                raise self.shape_error(f"query and value must match in the non-attention dimension "
                                       f"{d}. Received query {query} and value {value}.")

    # -- call ----------------------------------------------------------------------------------
    # The helpers below run inside the caller's tidy scope (call, call_with_cache), which frees
    # every tensor they make but the result.
    def _project(self, name: str, x: Tensor, heads_dim: int,
                 activation: str | None = None) -> Tensor:
        kernel, bias = self.gpu[name]
        flat = matmul.dense(x, kernel, bias, activation)
        return view(flat, x.shape[:-1] + (self.num_heads, heads_dim))

    @staticmethod
    def _canonical(x: Tensor, perm: tuple, batch_len: int) -> Tensor:
        """(B, d.., N, H) -> (G, T, N, H) with the batch-like axes first and the attention axes
        next (a view when they already are)."""
        if perm != tuple(range(x.ndim)):
            x = layout.transpose(x, perm)
        shape = x.shape
        g = math.prod(shape[:batch_len])
        t = math.prod(shape[batch_len:-2])
        return view(x, (g, t) + tuple(shape[-2:]))

    def call(self, query, value, key=None, query_mask=None, value_mask=None, key_mask=None,
             attention_mask=None, return_attention_scores=False, training=None,
             use_causal_mask=False, **kwargs):
        key = value if key is None else key
        self._check_shapes(query.shape, value.shape, key.shape)
        rank = query.ndim
        axes = self._axes_for_rank(rank)
        batch_axes = tuple(d for d in range(rank - 1) if d not in axes)
        perm = batch_axes + axes + (rank - 1, rank)
        scores_shape = tuple(query.shape[d] for d in batch_axes) + (self.num_heads,) + \
            tuple(query.shape[a] for a in axes) + tuple(value.shape[a] for a in axes)
        nb, na = len(batch_axes), len(axes)
        groups = (tuple(range(nb)), (nb,), tuple(range(nb + 1, nb + 1 + na)),
                  tuple(range(nb + 1 + na, nb + 1 + 2 * na)))

        def compute():
            mask, causal_in_kernel, window_in_kernel = self._attention_mask(
                query, value, query_mask, value_mask, key_mask,
                attention_mask, use_causal_mask, axes, scores_shape, groups)
            q = self._canonical(self._project("query", query, self.key_dim), perm, nb)
            k = self._canonical(self._project("key", key, self.key_dim), perm, nb)
            v = self._canonical(self._project("value", value, self.value_dim), perm, nb)
            mode = self._mask_mode(rank, return_attention_scores)
            weights = attn_ops.attention_weights(
                q, k, scale=1.0 / math.sqrt(float(self.key_dim)), mask=mask,
                causal=causal_in_kernel, window=self.sliding_window if window_in_kernel else None,
                **mode)
            combined = attn_ops.attention_combine(weights, v)
            context = self._back_to_keras_layout(combined, perm, query)
            if self.use_gate:
                context = elementwise.mul(
                    context, self._project("gate", query, self.value_dim, "sigmoid"))
            output = self._output_projection(context)
            if return_attention_scores:
                return [output, view(weights, scores_shape)]
            return output
        return ownership.tidy.run(compute)

    def _mask_mode(self, rank: int, return_scores: bool) -> dict:
        if self.keras_major == 2:
            return {"mask_mode": "subtract", "mask_fill": -KERAS_SOFTMAX_MASK_FILL, "zero_masked": False}
        fused = self.dropout == 0.0 and not return_scores and rank == 3
        if fused:
            return {"mask_mode": "replace", "mask_fill": DOT_PRODUCT_ATTENTION_FILL,
                    "zero_masked": False}
        return {"mask_mode": "replace", "mask_fill": KERAS_SOFTMAX_MASK_FILL, "zero_masked": True}

    def _attention_mask(self, query, value, query_mask, value_mask, key_mask, attention_mask,
                        use_causal_mask, axes, scores_shape, groups):
        """Keras's _compute_attention_mask: query mask (B, T, 1) & value mask (B, 1, S) & key mask
        & causal (1, T, S) & sliding window & attention_mask, expanded to the score rank. Causal
        and window masks run inside the kernel when they line up with its (T, S) axes."""
        standard = axes == (1,)
        causal_in_kernel = bool(use_causal_mask) and standard
        window_in_kernel = self.sliding_window is not None and standard
        masks = []
        if query_mask is not None:
            masks.append(self._expanded(query_mask, -1))
        if value_mask is not None:
            masks.append(self._expanded(value_mask, -2))
        if key_mask is not None:
            masks.append(self._expanded(key_mask, -2))
        if (use_causal_mask and not causal_in_kernel) or \
                (self.sliding_window is not None and not window_in_kernel):
            masks.append(tensor(_causal_numpy(query.shape[1], value.shape[1],
                                              None if window_in_kernel else self.sliding_window,
                                              bool(use_causal_mask) and not causal_in_kernel)))
        if attention_mask is not None:
            masks.append(attention_mask)
        merged = _merge_masks(self, masks)
        if merged is None:
            return None, causal_in_kernel, window_in_kernel
        # Keras inserts axes before the (query, key) attention axes until the ranks match.
        rank = len(scores_shape)
        if merged.ndim < rank:
            at = merged.ndim - 2 * len(axes)
            if at < 0:
                raise self.shape_error(f"a mask of shape {list(merged.shape)} is too small for "
                                       f"attention scores {list(scores_shape)}.")
            shape = merged.shape[:at] + (1,) * (rank - merged.ndim) + merged.shape[at:]
            merged = view(merged, shape)
        return (_mask_as_gnts(self, merged, scores_shape, groups),
                causal_in_kernel, window_in_kernel)

    @staticmethod
    def _expanded(mask: Tensor, axis: int) -> Tensor:
        shape = list(mask.shape)
        shape.insert(len(shape) + 1 + axis, 1)
        return view(mask, shape)

    def _back_to_keras_layout(self, combined, perm, query):
        """(G, T, N, Hv) -> (B, d.., N, Hv) in the query's axis order."""
        rank = query.ndim
        permuted_shape = tuple(query.shape[a] for a in perm[:-2]) + (self.num_heads, self.value_dim)
        x = view(combined, permuted_shape)
        if perm != tuple(range(rank + 1)):
            x = layout.transpose(x, tuple(int(i) for i in np.argsort(perm)))
        return x

    def _output_projection(self, context: Tensor) -> Tensor:
        kernel, bias = self.gpu["output"]
        rows = view(context, context.shape[:-2] + (self.num_heads * self.value_dim,))
        return view(matmul.dense(rows, kernel, bias), context.shape[:-2] + self.out_tail)
