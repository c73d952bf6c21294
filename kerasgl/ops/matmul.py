"""Matrix multiplication with a fused epilogue: C = act(A @ B + bias).

Follows np.matmul: 2-D matrices, 1-D vectors (promoted, then squeezed), and N-D stacks of matrices
whose batch dimensions broadcast. `transpose_a` / `transpose_b` read an operand transposed in its
last two dimensions without copying it (the shader reads through strides).

The kernel (shaders/matmul.comp) computes a block of TM x 4 outputs per invocation and uses vec4
loads wherever the layout allows. Where the device's tuning says so (matmul_tiled: GPUs), a
large product whose layout allows it runs as a tiled GEMM instead (shaders/matmul_tiled.comp,
ops/gemm_tiles.py); where it says matmul_as_conv (llvmpipe), on the convolution kernel.

B may be float16 weights (a Dense or EinsumDense kernel of a model loaded with
storage_dtype="float16", ops/half_weights.py): every variant reads it through
shaders/half_weights.glsl, unpacking the halves to float32; A, the bias and the sums stay float32.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..runtime import buffer_views, tuning
from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import HALF, Tensor, empty, view
from . import conv, dispatch, gemm_tiles, half_weights, splits, work
from .creation import zeros
from .elementwise import broadcast_shape
from .softmax import softmax as softmax_op
from . import storage_ops
from .storage_ops import any_storage, to_buffer

MAX_BATCH_RANK = 6
MAX_GROUPS_PER_DIM = 65535


def activation_function(function: str | None) -> str:
    """The GLSL function name for an activation given as 'relu' or 'act_relu' (None: identity)."""
    if not function:
        return "act_linear"
    return function if function.startswith("act_") else f"act_{function}"


def _check_operand(x, what: str, halves: bool = False) -> Tensor:
    """x, checked: a live float32 tensor (or float16 weights, where `halves`: B's only)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"matmul takes kerasgl Tensors; {what} is a {type(x).__name__}.")
    x._check_alive()
    if x.dtype != "float32" and not (halves and x.dtype == HALF):
        also = " (and float16 weights as b)" if halves else ""
        raise ShapeError(f"matmul takes float32 tensors{also}. Received {what} of dtype "
                         f"{x.dtype} and shape {list(x.shape)}.")
    if x.ndim == 0:
        raise ShapeError(f"matmul does not take scalars. Received {what} of shape [].")
    return x


def matmul_shape(a_shape, b_shape, transpose_a=False, transpose_b=False) -> tuple[int, ...]:
    """np.matmul's output shape (after the optional transposes), with kerasgl's errors."""
    a2 = (1,) + tuple(a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b2 = tuple(b_shape) + (1,) if len(b_shape) == 1 else tuple(b_shape)
    if transpose_a and len(a_shape) > 1:
        a2 = a2[:-2] + (a2[-1], a2[-2])
    if transpose_b and len(b_shape) > 1:
        b2 = b2[:-2] + (b2[-1], b2[-2])
    if a2[-1] != b2[-2]:
        raise ShapeError(
            f"matmul: the contracted dimensions differ: {a2[-1]} (last of a{' transposed' if transpose_a else ''}, "
            f"shape {list(a_shape)}) vs {b2[-2]} (second to last of b{' transposed' if transpose_b else ''}, "
            f"shape {list(b_shape)}).")
    batch = broadcast_shape(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a_shape) == 1:
        out = out[:-2] + out[-1:]
    if len(b_shape) == 1:
        out = out[:-1]
    return out


def _batch_strides(shape, batch_shape, matrix_size) -> list[int]:
    """Element strides of the batch dimensions of a C-contiguous stack of matrices, seen through
    `batch_shape` (0 where the operand is broadcast)."""
    shape = (1,) * (len(batch_shape) - len(shape)) + tuple(shape)
    strides, step = [0] * len(shape), matrix_size
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = 0 if shape[d] == 1 and batch_shape[d] != 1 else step
        step *= shape[d]
    return strides


def _merge_batch_dims(batch_shape, a_strides, b_strides):
    """Fold adjacent batch dimensions that index both operands contiguously, so the common cases
    (no broadcasting, or one operand shared by every matrix) need no per-invocation division."""
    dims = [(s, sa, sb) for s, sa, sb in zip(batch_shape, a_strides, b_strides) if s != 1]
    merged = []
    for size, sa, sb in dims:
        if merged:
            psize, psa, psb = merged[-1]
            if psa == sa * size and psb == sb * size:
                merged[-1] = (psize * size, sa, sb)
                continue
        merged.append((size, sa, sb))
    return merged


def _block_config(M: int, N: int) -> tuple[int, int, int, int]:
    """(rows per invocation, vec4 columns per invocation, work group x, work group y).

    Measured on llvmpipe (2 cores, AVX2) at 1024x1024: an 8x8 block per invocation with 16 lanes
    along N and 4 along M ran ~1.5-2x faster than 4x4 or 8x4 blocks. Small matrices get smaller
    blocks and groups so that few lanes compute clamped duplicates (M = 1 is Dense at batch 1).
    Few distinct values, so few shader variants are compiled."""
    tm = 8 if M >= 8 else (4 if M >= 4 else 1)
    nv = 2 if N >= 8 else 1
    lanes_n = math.ceil(N / (4 * nv))
    lx = 16 if lanes_n >= 16 else (4 if lanes_n >= 4 else 1)
    lanes_m = math.ceil(M / tm)
    ly = min(64 // lx, 16 if lanes_m >= 16 else (4 if lanes_m >= 4 else 1))
    return tm, nv, lx, ly


# The tiled GEMM (matmul_tiled.comp) takes products with at least this many rows and columns:
# smaller ones (a Dense at batch 1 is one row) would leave most of a tile's invocations idle,
# where matmul.comp's small blocks do not.
TILED_MIN_SIDE = 16


# A Dense with softmax of at most this many units computes the softmax in the matmul's epilogue
# (one invocation holds a row: N <= 4 * NV): one dispatch fewer for a classifier head (llvmpipe
# costs ~35 us per dispatch whatever it does).
SOFTMAX_MAX_COLUMNS = 32


def _softmax_block_config(M: int, N: int) -> tuple[int, int, int, int]:
    """One row per invocation, all its columns (see _block_config for the fields)."""
    nv = math.ceil(N / 4)
    ly = 16 if M >= 16 else (4 if M >= 4 else 1)
    return 1, nv, 1, ly


def _pad(values, fill=0):
    return tuple(values) + (fill,) * (MAX_BATCH_RANK - len(values))


# A, B (where it is an activation: weights are buffers) and the bias may be tensors stored in
# textures: every variant reads them in place (texture_operand.glsl), and writes C as a texture
# when they all are; a large product that runs on the convolution kernel (_runs_as_conv) does so
# only with B and the bias in buffers (they are its weights), A read in place either way.
@any_storage(in_place=("a", "b", "bias"))
def matmul(a: Tensor, b: Tensor, bias: Tensor | None = None, activation: str | None = None,
           activation_params: tuple = (), transpose_a: bool = False,
           transpose_b: bool = False) -> Tensor:
    """act(a @ b + bias) as np.matmul, with numpy broadcasting of batch dimensions.

    bias: a 1-D tensor of length N (the last output dimension), added before the activation.
    activation: a function of shaders/activations.glsl ('relu' or 'act_relu'); activation_params
    fill its uniforms act_p0.. (e.g. the slope of leaky_relu). 'softmax': a softmax over each
    row, in the same dispatch, for N <= SOFTMAX_MAX_COLUMNS (a classifier head).
    """
    return _matmul(a, b, bias, activation, activation_params, transpose_a, transpose_b)


def _matmul(a, b, bias, activation, activation_params, transpose_a, transpose_b, out=None,
            out_column: int = 0) -> Tensor:
    """matmul's work. `out` (2-D operands only, no softmax): write the result into columns
    [out_column, out_column + N) of this [M, wider] buffer tensor instead of a new one (a piece
    of a ColumnSplit), and return it."""
    softmax = activation in ("softmax", "act_softmax")
    if softmax:
        activation = None
    a, b = _check_operand(a, "a"), _check_operand(b, "b", halves=True)
    out_shape = matmul_shape(a.shape, b.shape, transpose_a, transpose_b)
    a_shape = (1,) + a.shape if a.ndim == 1 else a.shape
    b_shape = b.shape + (1,) if b.ndim == 1 else b.shape
    # A vector is never transposed (np.matmul has no such notion).
    transpose_a = transpose_a and a.ndim > 1
    transpose_b = transpose_b and b.ndim > 1
    a_rows, a_cols = a_shape[-2:]
    b_rows, b_cols = b_shape[-2:]
    M, K = (a_cols, a_rows) if transpose_a else (a_rows, a_cols)
    N = b_rows if transpose_b else b_cols
    if bias is not None:
        bias = _check_operand(bias, "bias")
        if bias.shape != (N,):
            raise ShapeError(f"matmul: bias must have shape [{N}] (the output's last dimension). "
                             f"Received bias of shape {list(bias.shape)}.")

    if softmax and N > SOFTMAX_MAX_COLUMNS:
        raise ShapeError(f"matmul: a softmax in the matmul needs at most {SOFTMAX_MAX_COLUMNS} "
                         f"columns. Received an output of shape {list(out_shape)}.")
    if out is None and not softmax and a.ndim >= 2 and b.ndim >= 2 and b.storage == "buffer" \
            and (bias is None or bias.storage == "buffer") and _runs_as_conv(
            M, K, N, math.prod(out_shape[:-2]), transpose_a, transpose_b, a_shape, bias):
        return _matmul_as_conv(a, ((0, b, bias),), activation, activation_params, M, K, N,
                               out_shape)

    c_rs, c_off = N, 0           # the output's row stride and first column, in elements
    if out is None:
        out = empty(out_shape, storage=storage_ops.result_storage(a, b, bias))
    else:
        if a.ndim != 2 or b.ndim != 2 or softmax or out.ndim != 2 or out.shape[0] != M \
                or not 0 <= out_column <= out.shape[1] - N:
            raise ShapeError(f"matmul into columns {out_column}..{out_column + N} of an output of "
                             f"shape {list(out.shape)} takes 2-D operands of {M} rows, no softmax.")
        c_rs, c_off = out.shape[1], out_column
    if out.size == 0:
        return out
    if K == 0:
        raise ShapeError(f"matmul with an empty contracted dimension is not supported "
                         f"(a: {list(a.shape)}, b: {list(b.shape)}).")

    batch_shape = tuple(out_shape[:-2]) if a.ndim > 1 and b.ndim > 1 else \
        broadcast_shape(a_shape[:-2], b_shape[:-2])
    merged = _merge_batch_dims(batch_shape, _batch_strides(a_shape[:-2], batch_shape, M * K),
                               _batch_strides(b_shape[:-2], batch_shape, K * N))
    if len(merged) > MAX_BATCH_RANK:
        raise ShapeError(f"matmul supports up to {MAX_BATCH_RANK} broadcast batch dimensions. "
                         f"Received a: {list(a.shape)}, b: {list(b.shape)}.")
    n_batch = math.prod(batch_shape)
    plain = (len(merged) == 0 or (len(merged) == 1 and merged[0][1] == M * K
                                  and merged[0][2] == K * N))

    a_rs, a_cs = (1, a_cols) if transpose_a else (a_cols, 1)
    b_rs, b_cs = (1, b_cols) if transpose_b else (b_cols, 1)
    a_aligned = a_cs == 1 and K % 4 == 0 and all(s % 4 == 0 for _, s, _ in merged)
    b_aligned = b_cs == 1 and N % 4 == 0 and all(s % 4 == 0 for _, _, s in merged)
    # B transposed, contiguous along k: the tiled kernel reads it in vec4s along k.
    b_along_k = b_rs == 1 and K % 4 == 0 and all(s % 4 == 0 for _, _, s in merged)
    c_aligned = N % 4 == 0 and c_rs % 4 == 0 and c_off % 4 == 0
    choice = tuning.current()
    tiled = (choice.matmul_tiled and not softmax and a_aligned and (b_aligned or b_along_k)
             and c_aligned and M >= TILED_MIN_SIDE and N >= TILED_MIN_SIDE)
    views_wanted = choice.matmul_views
    b_format = half_weights.view_format(b)         # float16 B: an rg32ui view of its words
    # Views are of buffers: a texture operand is read in place instead.
    a_view = views_wanted and a_aligned and a.storage == "buffer" and buffer_views.fits(a.nbytes)
    b_view = (views_wanted and (b_aligned or tiled) and b.storage == "buffer"
              and buffer_views.fits(b.nbytes, b_format))
    common = {"A_VIEW": a_view, "B_VIEW": b_view, "HAS_BIAS": bias is not None,
              "ACT": activation_function(activation), "BROADCAST": not plain,
              **half_weights.defines(b)}
    if tiled:
        tiles = gemm_tiles.current()
        shader = "matmul_tiled.comp"
        defines = {**common, **tiles.defines(), "B_ALONG_K": not b_aligned}
        groups_x, groups_y = math.ceil(N / tiles.n), math.ceil(M / tiles.m)
    else:
        tm, nv, lx, ly = _softmax_block_config(M, N) if softmax else _block_config(M, N)
        shader = "matmul.comp"
        defines = {**common, "TM": tm, "NV": nv, "LX": lx, "LY": ly, "A_VEC4": a_aligned,
                   "B_VEC4": b_aligned, "C_VEC4": c_aligned,
                   "BIAS_VEC4": bias is not None and N % 4 == 0, "SOFTMAX": softmax}
        groups_x = math.ceil(math.ceil(N / (4 * nv)) / lx)
        groups_y = math.ceil(math.ceil(M / tm) / ly)
    uniforms = {
        "M": M, "N": N, "K": K, "a_rs": a_rs, "a_cs": a_cs, "b_rs": b_rs, "b_cs": b_cs,
        "a_off": 0, "b_off": 0, "c_rs": c_rs, "c_off": c_off, "batch_rank": len(merged),
        "batch_shape": _pad([m[0] for m in merged], 1),
        "a_batch_strides": _pad([m[1] for m in merged]),
        "b_batch_strides": _pad([m[2] for m in merged]),
        **{f"act_p{i}": float(v) for i, v in enumerate(activation_params)},
    }
    if groups_x > MAX_GROUPS_PER_DIM or groups_y > MAX_GROUPS_PER_DIM:
        raise ShapeError(f"matmul output of shape {list(out_shape)} exceeds the GPU's work group grid.")
    # An unused bias binding (None) gets a stand-in buffer (run_in_place): the kernel declares
    # no bias block then.
    buffers = [a, b, bias, out]
    # The op's work, shared out over the dispatches by their batches (ops/work.py).
    flops, moved = 2 * M * N * K * n_batch, work.nbytes(a, bias) + b.nbytes + 4 * M * N * n_batch
    for base in range(0, n_batch, MAX_GROUPS_PER_DIM):
        uniforms["batch_base"] = base
        batches = min(MAX_GROUPS_PER_DIM, n_batch - base)
        storage_ops.run_in_place(shader, reads={0: "A", 1: "B", 2: "BIAS"}, writes={3: "C"},
                     defines=defines, buffers=buffers, uniforms=uniforms,
                     views=([(0, a)] if a_view else []) + ([(1, b, b_format)] if b_view else []),
                     groups=(groups_x, groups_y, batches),
                     work=(flops * batches // n_batch, moved * batches // n_batch))
    return out


# A matmul at least this large (M * K * N) runs on the convolution kernel where the device's tuning
# says so (kerasgl/runtime/tuning.py): its larger tiles pay from here on. B is read in place, as a 1x1
# kernel whose input-channel rows are B's rows (llvmpipe, 1024^3 with both operands read through
# buffer views: 60 GFLOP/s when B was packed per call, see scripts/probe_matmul.py).
AS_CONV_MIN_WORK = 1 << 21


def _runs_as_conv(M, K, N, n_batch, transpose_a, transpose_b, a_shape, bias) -> bool:
    block = 4 * conv.choose_cout_vec(N)
    return (tuning.current().matmul_as_conv and n_batch == 1 and not transpose_a
            and not transpose_b and len(a_shape) >= 2 and K % 4 == 0
            and N % 4 == 0 and M >= 16 and N >= 16 and M * K * N >= AS_CONV_MIN_WORK
            and (bias is None or N % block == 0))


def _matmul_as_conv(a, columns, activation, activation_params, M, K, N, out_shape):
    """act(a @ b + bias) as a 1x1 convolution over M pixels of K channels (ops/conv.py) whose
    weights are B itself: row k of B holds input channel k's weights for all N outputs, so the
    kernel reads block j's four output-channel vec4s at B[k, 32j:32j+32] (strides in vec4s:
    N/4 between rows, cout_vec between blocks). The last block may read past N: into the next row,
    or past the buffer's end, where a view reads 0 (and a storage buffer its bounds-checked 0);
    those channels are never written.
    columns: (first column, B's columns from there [K, width], their bias or None) per piece of
    B: one, (0, b, bias), unless B is a ColumnSplit (whose pieces start on whole blocks)."""
    cout_vec = conv.choose_cout_vec(N)
    block = 4 * cout_vec

    def compute():        # in a tidy scope: the zero biases, the views and y go at its end
        parts = []
        for first, b, bias in columns:
            width = b.shape[1]
            blocks = math.ceil(width / block)
            if bias is None:
                bias = zeros((blocks * block,))
            # float16 B (weights) is read as such by the convolution kernels too.
            parts.append(conv.ConvPiece(first // block, blocks, b, bias, row_stride=width // 4))
        kernel = conv.ConvKernel(tuple(parts), 1, 1, K, N, 1, cout_vec, block_stride=cout_vec)
        pixels = view(a, (1, 1, M, K))
        # conv2d_into, not conv2d: B (the weights) is a buffer, so the result is one whatever
        # A's storage (a texture A is read in place).
        y = conv.conv2d_into(pixels, kernel, (1, 1), (1, 1), ((0, 0), (0, 0)), conv.Pointwise(
            activation_function(activation), tuple(activation_params)), None, 1, None,
            conv.GEMM_PIX, "buffer")
        return view(y, out_shape)
    return ownership.tidy.run(compute)


# -------------------------------------------------------------------------------------------------
# Dense weights larger than one storage block (ops/splits.py)
# -------------------------------------------------------------------------------------------------
# Pieces of a split kernel are whole multiples of this many columns where that fits: 4 times the
# convolution kernel's widest block of output channels (tuning conv_cout_vec, 8), so that a large
# batch runs every piece on the convolution kernel like an unsplit matrix (_matmul_as_conv).
SPLIT_COLUMNS = 32


@dataclass(frozen=True)
class ColumnSplit:
    """A Dense kernel [K, N] and its bias too large for one storage block, held as pieces of
    whole columns, each in a buffer of its own: x @ kernel runs one matmul dispatch per piece,
    each writing its columns of the one output (dense). VGG16's fc1, 25088 x 4096 (411 MB),
    is 4 pieces of 1024 columns under llvmpipe's 128 MiB."""
    shape: tuple             # (K, N), as the kernel's
    pieces: tuple            # (first column, kernel columns [K, width], bias [width] or None)

    ndim = 2

    def dispose(self) -> None:
        for _, kernel, bias in self.pieces:
            kernel.dispose()
            if bias is not None:
                bias.dispose()


def upload_dense(kernel, bias, upload, owner: str = "A Dense layer", dtype: str = "float32"):
    """(kernel, bias) of a Dense on the GPU, through `upload(array) -> Tensor` (a layer's, which
    owns them): two tensors (bias None if absent), or, for a kernel larger than one storage
    block, a ColumnSplit holding the bias too, and None. `owner` names the layer in errors.
    dtype: how the kernel is stored, "float32" or "float16" (load_model's storage_dtype: halves,
    which every matmul variant reads, ops/half_weights.py); the bias stays float32."""
    rows, columns = kernel.shape
    what = f"{owner}: its kernel of shape {list(kernel.shape)}"
    limit = splits.storage_block_bytes()
    column_bytes = half_weights.item_bytes(dtype) * rows
    multiple = next((m for m in (SPLIT_COLUMNS, 4) if m * column_bytes <= limit), 1)
    cut = splits.pieces(columns, column_bytes, what, "column(s)", multiple=multiple)
    if len(cut) == 1:
        return (half_weights.upload_as(upload, kernel, dtype),
                upload(bias) if bias is not None else None)
    pieces = tuple((first, half_weights.upload_as(upload, kernel[:, first:first + width], dtype),
                    upload(bias[first:first + width]) if bias is not None else None)
                   for first, width in cut)
    return ColumnSplit((rows, columns), pieces), None


def _split_matmul(rows: Tensor, split: ColumnSplit, activation, activation_params) -> Tensor:
    """act(rows @ kernel + bias) for a 2-D buffer tensor `rows` and a ColumnSplit kernel."""
    M, K = rows.shape
    N = split.shape[1]
    block = 4 * conv.choose_cout_vec(N)
    if _runs_as_conv(M, K, N, 1, False, False, rows.shape, None) and all(
            first % block == 0 and piece.shape[1] % 4 == 0
            and (bias is None or piece.shape[1] % block == 0)
            for first, piece, bias in split.pieces):
        return _matmul_as_conv(rows, split.pieces, activation, activation_params, M, K, N, (M, N))

    def compute():        # in a tidy scope: `out` goes too if a piece fails
        out = empty((M, N))
        for first, piece, bias in split.pieces:
            _matmul(rows, piece, bias, activation, activation_params, False, False, out=out,
                    out_column=first)
        return out
    return ownership.tidy.run(compute)


def dense(x: Tensor, kernel, bias: Tensor | None = None, activation: str | None = None,
          activation_params: tuple = ()) -> Tensor:
    """x @ kernel (+ bias, activation) over the last dimension of an input of any rank >= 1:
    the leading dimensions are folded into the rows of one 2-D matmul (a view, no copy).
    kernel: a Tensor, or a ColumnSplit (upload_dense) holding the bias itself."""
    _check_operand(x, "x")
    if kernel.ndim != 2 or x.shape[-1] != kernel.shape[0]:
        raise ShapeError(f"dense expects the last input dimension to be {kernel.shape[0]}. "
                         f"Received input shape {list(x.shape)}.")
    if isinstance(kernel, ColumnSplit):
        return _split_dense(x, kernel, activation, activation_params)
    if x.ndim == 2:
        return matmul(x, kernel, bias, activation, activation_params)

    def compute():        # in a tidy scope: the views of the rows and the 2-D result go
        rows = view(x, (math.prod(x.shape[:-1]), x.shape[-1]))
        flat = matmul(rows, kernel, bias, activation, activation_params)
        return view(flat, x.shape[:-1] + (kernel.shape[1],))
    return ownership.tidy.run(compute)


def _split_dense(x: Tensor, kernel: ColumnSplit, activation, activation_params) -> Tensor:
    """dense over a ColumnSplit kernel: the rows in a buffer, one dispatch per piece (a softmax,
    which needs whole rows, runs after them)."""
    softmax = activation in ("softmax", "act_softmax")

    def compute(x):       # in a tidy scope: every tensor made here but the result goes
        if x.storage != "buffer":
            x = to_buffer(x)
        rows = view(x, (math.prod(x.shape[:-1]), x.shape[-1]))
        flat = _split_matmul(rows, kernel, None if softmax else activation, activation_params)
        if softmax:
            flat = softmax_op(flat)
        return view(flat, x.shape[:-1] + (kernel.shape[1],))
    return ownership.tidy.run(compute, x)
