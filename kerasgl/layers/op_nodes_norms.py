"""keras.ops.nn normalisations, attention and losses recorded in Keras 3 graphs (the rest of
op_nodes_nn.py): batch_normalization with statistics tensors, layer_normalization,
rms_normalization, dot_product_attention, binary / categorical / sparse categorical
cross-entropy and PSNR, each the arithmetic of Keras's jax backend in the same order.
"""
from __future__ import annotations

import math

import numpy as np

from ..ops import elementwise, index_map, layout, normalization, reduce, softmax
from ..ops.arg_ops import one_hot
from ..ops.attention import attention_combine, attention_weights, mask_and
from ..ops.math_unary import math_unary
from ..tensors import ownership
from ..tensors.tensor import retag, tensor
from .op_nodes import OpNode, _shape, broadcast_dims, register_op
from .op_nodes_linalg import contract
from .refusals import refuse_ops

EPSILON = 1e-7                    # keras.backend.epsilon()
_MASK_FILL = -0.7 * float(np.finfo(np.float32).max)   # jax.nn.dot_product_attention's


def _tidy(compute):
    return ownership.tidy.run(compute)


def _axes(node, axis, rank):
    axes = [axis] if isinstance(axis, int) else list(axis)
    if any(not -rank <= a < rank for a in axes):
        raise node.shape_error(f"axis {axis!r} is out of range for rank {rank}.")
    return sorted(a % rank for a in axes)


@register_op("BatchNorm")
class BatchNormOp(OpNode):
    """x * inv + (offset - mean * inv), inv = rsqrt(variance + epsilon) * scale, the statistics
    (1-D, one value per channel of `axis`) reshaped to broadcast along it."""
    params = ("x", "mean", "variance", "offset", "scale")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "math_unary.comp")

    def stat_shape(self, bound, shape):
        rank = len(shape)
        axis = _axes(self, self.opt(bound, "axis"), rank)[0]
        for name in ("mean", "variance", "offset", "scale"):
            value = bound.get(name)
            if value is not None and len(getattr(value, "shape", ())) != 1:
                raise self.unsupported(f"a {name} of shape {list(value.shape)} (1-D only)")
        return tuple(-1 if d == axis else 1 for d in range(rank))

    def output_shape(self, bound):
        self.stat_shape(bound, _shape(bound["x"]))
        return _shape(bound["x"])

    def run(self, bound):
        x = bound["x"]
        stat = self.stat_shape(bound, x.shape)
        eps = float(self.opt(bound, "epsilon", 1e-3))

        def shaped(name):
            v = bound.get(name)
            return None if v is None else layout.reshape(v, stat)

        def compute():
            inv = math_unary("rsqrt", elementwise.add(shaped("variance"), eps))
            if shaped("scale") is not None:
                inv = elementwise.mul(inv, shaped("scale"))
            res = elementwise.mul(elementwise.unary("neg", shaped("mean")), inv)
            if shaped("offset") is not None:
                res = elementwise.add(res, shaped("offset"))
            return elementwise.add(elementwise.mul(x, inv), res)
        return _tidy(compute)


@register_op("LayerNorm")
class LayerNormOp(OpNode):
    """ops/normalization.layer_norm (gamma / beta: one value per element of the normalised
    axes, in their order; other broadcast shapes are refused at load)."""
    params = ("x", "gamma", "beta")
    input_dtypes = ("float32",)
    shaders = ("layer_norm.comp",)

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        axes = _axes(self, self.opt(bound, "axis", -1), len(shape))
        want = [shape[a] for a in axes if shape[a] != 1]
        for name in ("gamma", "beta"):
            value = bound.get(name)
            if value is not None and [n for n in _shape(value) if n != 1] != want:
                raise self.unsupported(f"a {name} of shape {list(_shape(value))} (only the "
                                       f"normalised axes' shape {want})")
        return shape

    def run(self, bound):
        eps = self.opt(bound, "epsilon")
        return normalization.layer_norm(bound["x"], bound.get("gamma"), bound.get("beta"),
                                        self.opt(bound, "axis", -1),
                                        EPSILON if eps is None else float(eps),
                                        bool(self.opt(bound, "rms_scaling", False)))


@register_op("RMSNorm")
class RMSNormOp(OpNode):
    """x * rsqrt(mean(x * x) + epsilon) (* scale, broadcast as numpy)."""
    params = ("x", "scale")
    input_dtypes = ("float32",)
    shaders = ("reduce.comp", "binary.comp", "math_unary.comp")

    def output_shape(self, bound):
        shape = _shape(bound["x"])
        _axes(self, self.opt(bound, "axis", -1), len(shape))
        if bound.get("scale") is not None:
            return broadcast_dims(shape, _shape(bound["scale"]), f"Layer '{self.name}'")
        return shape

    def run(self, bound):
        x, scale, eps = bound["x"], bound.get("scale"), self.opt(bound, "epsilon")
        axes = tuple(_axes(self, self.opt(bound, "axis", -1), x.ndim))

        def compute():
            ms = reduce.reduce("mean", elementwise.mul(x, x), axes, True)
            out = elementwise.mul(x, math_unary("rsqrt", elementwise.add(
                ms, EPSILON if eps is None else float(eps))))
            return out if scale is None else elementwise.mul(out, scale)
        return _tidy(compute)


@register_op("DotProductAttention")
class DotProductAttentionOp(OpNode):
    """softmax(q.k * scale + bias, masked) . v over (batch, time, heads, depth) tensors, as
    jax.nn.dot_product_attention (masked logits become -0.7 * float32 max). Without a bias:
    ops/attention.py's kernels; with one: matmuls, the bias added, the mask applied as
    logits * m + fill * (1 - m) (exact: m is 0 or 1), a softmax. Grouped heads (fewer key /
    value heads than query heads) repeat each key head for its group, as jax does."""
    params = ("query", "key", "value", "bias", "mask", "scale", "is_causal")
    shaders = ("attention_softmax.comp", "attention_combine.comp", "attention_mask.comp",
               "matmul.comp", "transpose.comp", "binary.comp", "softmax.comp")

    def output_shape(self, bound):
        q, k, v = (_shape(bound[n]) for n in ("query", "key", "value"))
        for name in ("query", "key", "value", "bias"):
            dtype = getattr(_shape(bound.get(name)), "dtype", "float32")
            if bound.get(name) is not None and dtype != "float32":
                raise self.unsupported(f"a {_shape(bound[name]).dtype} {name}")
        if len(q) != 4 or len(k) != 4 or len(v) != 4:
            raise self.shape_error("query, key and value must be 4-D (batch, time, heads, depth).")
        if None not in (q[2], k[2]) and q[2] % k[2]:
            raise self.shape_error(f"{q[2]} query heads do not share {k[2]} key heads.")
        for name in ("bias", "mask"):
            if bound.get(name) is not None and len(_shape(bound[name])) != 4:
                # Keras's jax fallback reads a 3-D one as (batch, 1, T, S) or (batch, N, 1, S),
                # not by numpy's broadcasting: only the unambiguous 4-D form runs here
                raise self.unsupported(f"a {name} of rank {len(_shape(bound[name]))} (only 4-D)")
        if self.opt(bound, "attn_logits_soft_cap") is not None:
            raise self.unsupported("attn_logits_soft_cap")
        return q[:3] + v[3:]

    def run(self, bound):
        q, k, v = bound["query"], bound["key"], bound["value"]
        bias = bound.get("bias")
        scale = self.opt(bound, "scale")
        scale = 1.0 / math.sqrt(k.shape[-1]) if scale is None else float(scale)
        causal = bool(self.opt(bound, "is_causal", False))
        _, T, N, _ = q.shape
        S = k.shape[1]

        def compute():
            mask, key, value = bound.get("mask"), k, v
            if k.shape[2] != N:           # grouped heads: query head n reads key head n // G
                key = index_map.repeat(k, N // k.shape[2], 2)
                value = index_map.repeat(v, N // k.shape[2], 2)
            if mask is not None and mask.dtype == "bool":
                mask = retag(mask, "int32")     # the same 0 / 1 words (tensor.py)
            if bias is None:
                weights = attention_weights(q, key, scale=scale, mask=mask, causal=causal,
                                            mask_mode="replace", mask_fill=_MASK_FILL)
                return attention_combine(weights, value)
            logits = elementwise.add(elementwise.mul(
                contract([(q, "btnh"), (key, "bsnh")], "bnts"), scale), bias)
            if mask is not None or causal:
                shape = logits.shape
                keep = mask_and(mask, None, shape) if mask is not None else None
                if causal:
                    tril = tensor(np.tril(np.ones((T, S), np.float32)))
                    keep = tril if keep is None else elementwise.mul(keep, tril)
                drop = elementwise.sub(1.0, keep)
                logits = elementwise.add(elementwise.mul(logits, keep),
                                         elementwise.mul(drop, _MASK_FILL))
            probs = softmax.softmax(logits, -1)
            return contract([(probs, "bnts"), (value, "bsnh")], "btnh")
        return _tidy(compute)


# -------------------------------------------------------------------------------------------------
# Losses
# -------------------------------------------------------------------------------------------------
def _log_clipped(p):
    return elementwise.unary("log", elementwise.minimum(elementwise.maximum(p, EPSILON),
                                                        1.0 - EPSILON))


@register_op("BinaryCrossentropy")
class BinaryCrossentropyOp(OpNode):
    params = ("target", "output")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "unary.comp")

    def output_shape(self, bound):
        t, o = _shape(bound["target"]), _shape(bound["output"])
        if len(t) != len(o) or any(None not in (a, b) and a != b for a, b in zip(t, o)):
            raise self.shape_error(f"target {list(t)} and output {list(o)} differ in shape.")
        return o

    def run(self, bound):
        t, o = bound["target"], bound["output"]

        def compute():
            if self.opt(bound, "from_logits", False):
                # log_sigmoid(x) = -softplus(-x), as jax.nn.log_sigmoid
                log_p = elementwise.unary("neg", elementwise.unary(
                    "softplus", elementwise.unary("neg", o)))
                log_q = elementwise.unary("neg", elementwise.unary("softplus", o))
                first = elementwise.mul(elementwise.mul(-1.0, t), log_p)
                return elementwise.sub(first, elementwise.mul(elementwise.sub(1.0, t), log_q))
            clipped = elementwise.minimum(elementwise.maximum(o, EPSILON), 1.0 - EPSILON)
            bce = elementwise.add(elementwise.mul(t, elementwise.unary("log", clipped)),
                                  elementwise.mul(elementwise.sub(1.0, t), elementwise.unary(
                                      "log", elementwise.sub(1.0, clipped))))
            return elementwise.unary("neg", bce)
        return _tidy(compute)


def _log_prob(o, axis, from_logits):
    if from_logits:
        return softmax.log_softmax(o, axis)
    return _log_clipped(elementwise.div(o, reduce.reduce("sum", o, axis, True)))


@register_op("CategoricalCrossentropy", "SparseCategoricalCrossentropy")
class CategoricalCrossentropyOp(OpNode):
    """-sum(target * log p) over `axis`; the sparse one's int32 targets one-hot encoded (a
    trailing axis of 1 squeezed, as Keras does; only axis -1)."""
    params = ("target", "output")
    shaders = ("binary.comp", "reduce.comp", "softmax.comp", "unary.comp", "one_hot.comp")

    @property
    def sparse(self):
        return self.class_name.startswith("Sparse")

    def output_shape(self, bound):
        t, o = _shape(bound["target"]), _shape(bound["output"])
        want = "int32" if self.sparse else "float32"
        if getattr(t, "dtype", "float32") != want or getattr(o, "dtype", "float32") != "float32":
            raise self.unsupported(f"a {getattr(t, 'dtype', 'float32')} target "
                                   f"(this operation takes {want} targets and float32 outputs)")
        axis = _axes(self, self.opt(bound, "axis", -1), len(o))[0]
        if self.sparse:
            if axis != len(o) - 1:
                raise self.unsupported(f"axis={self.opt(bound, 'axis')!r} (only the last axis)")
            t = t[:-1] if len(t) == len(o) and t[-1] == 1 else t
            if len(t) != len(o) - 1:
                raise self.shape_error(f"target {list(t)} does not fit output {list(o)}.")
        elif len(t) != len(o):
            raise self.shape_error(f"target {list(t)} and output {list(o)} differ in shape.")
        return tuple(n for d, n in enumerate(o) if d != axis)

    def run(self, bound):
        t, o = bound["target"], bound["output"]
        axis = _axes(self, self.opt(bound, "axis", -1), o.ndim)[0]

        def compute():
            target = t
            if self.sparse:
                if t.ndim == o.ndim:
                    target = layout.reshape(t, t.shape[:-1])
                target = one_hot(target, o.shape[-1])
            log_p = _log_prob(o, axis, bool(self.opt(bound, "from_logits", False)))
            return elementwise.unary("neg", reduce.reduce("sum", elementwise.mul(target, log_p),
                                                          axis, False))
        return _tidy(compute)


@register_op("PSNR")
class PSNROp(OpNode):
    """20 log10(max_val) - 10 log10(mean((x1 - x2)^2)) over every element (the batch too)."""
    params = ("x1", "x2", "max_val")
    input_dtypes = ("float32",)
    shaders = ("binary.comp", "reduce.comp", "unary.comp")

    def output_shape(self, bound):
        return ()

    def run(self, bound):
        a, b = bound["x1"], bound["x2"]
        peak = 20.0 * math.log10(float(self.opt(bound, "max_val")))

        def compute():
            d = elementwise.sub(a, b)
            mse = reduce.reduce("mean", elementwise.mul(d, d), None, False)
            log10 = elementwise.mul(elementwise.unary("log", mse), 1.0 / math.log(10.0))
            return elementwise.sub(peak, elementwise.mul(log10, 10.0))
        return _tidy(compute)


refuse_ops({
    "CTCLoss": "its forward recursion over time steps (a log-sum-exp scan per label) is not run "
               "here",
    "CTCDecode": "its output's length depends on the values (greedy / beam search decoding), "
                 "which a GPU plan cannot have",
})
