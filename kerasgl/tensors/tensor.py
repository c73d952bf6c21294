"""Tensor: an n-dimensional float32, int32 or bool array living in a GL buffer or texture. A bool
tensor is stored as 32-bit words holding 0 or 1, as an int32 tensor is (bool -> int32 is a re-tag);
its numpy() is np.bool_.

A fourth dtype, "float16" (HALF), is for weights only: IEEE halves two per 32-bit word in a
buffer, made by half_tensor() when a model is loaded with storage_dtype="float16", read by the
kernels that unpack them (shaders/half_weights.glsl) and refused by every other op. It is not in
DTYPES: no user call makes one, and its numpy() is np.float16.

Thin on purpose: this module holds the data and its lifetime only. The operators and methods
that compute (`a + b`, `x.relu()`, `x.sum()`, `x.to_texture()`, ...) are attached to Tensor by
kerasgl/ops/tensor_methods.py, from the layer above, so that imports point one way. Its GL object
belongs to its Storage (ownership.py), which may be shared with views made by reshape.
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime import context, recording
from ..runtime.objects import GLObject
from . import ownership as memory
from ..errors import DisposedError, GPULimitError, InputValueError, ShapeError

# kerasgl dtype -> the numpy dtype of its 32-bit words in GPU memory (a bool is a 0 / 1 word).
DTYPES = {"float32": np.float32, "int32": np.int32, "bool": np.int32}
STORAGE_KINDS = ("buffer", "texture")
# What `empty` also takes as a storage: a float32 tensor in a texture of IEEE halves (r16f), the
# activations of a model run with activation_dtype="float16" (ops/half_activations.py). Kernels
# read and write it as float32 (the texture unit converts); its storage is "texture", its
# storage_dtype "float16", its nbytes two an element. Another dtype asked for so gets a 32-bit
# texture: only floats are halved.
HALF_TEXTURE = "half_texture"
HALF_TEXTURE_FORMAT = "f2"              # moderngl's dtype of an r16f texture
# Weights stored as IEEE half, two per 32-bit word in packHalf2x16's layout (element 2k in the low
# 16 bits of word k; an odd count ends with a zero half): half the memory of float32.
HALF = "float16"


def word_count(size: int, dtype: str) -> int:
    """The 32-bit words that hold `size` elements of `dtype` (two halves a word)."""
    return (size + 1) // 2 if dtype == HALF else size


def normalize_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise ShapeError(f"A shape must be a sequence of non-negative integers. Received {shape!r}.")
    if any(d < 0 for d in dims):
        raise ShapeError(f"A shape must be a sequence of non-negative integers. Received {shape!r}.")
    return dims


def normalize_dtype(dtype) -> str:
    if dtype is None:
        return "float32"
    if isinstance(dtype, str) and dtype in DTYPES:    # the common case, without a numpy call
        return dtype
    name = np.dtype(dtype).name
    if name not in DTYPES:
        raise ShapeError(f"kerasgl tensors are float32, int32 or bool. Received dtype {name}.")
    return name


class Tensor(memory.Owned):
    """A GPU tensor. Create with kg.tensor / zeros / ones / fill / random_*; free with dispose()."""
    __slots__ = ("shape", "dtype", "_storage", "_kept", "_disposed", "_created_at", "_disposed_at",
                 "__weakref__")

    def __init__(self, storage: memory.Storage, shape, dtype: str):
        self.shape = tuple(shape)
        self.dtype = dtype
        self._storage = storage.acquire()
        self._kept = False
        self._disposed = False
        self._created_at = None
        self._disposed_at = None
        memory.register_tensor(self)

    # -- properties -------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    rank = ndim

    @property
    def nbytes(self) -> int:
        """Bytes of its data on the GPU (a float16 tensor's: two elements per 4-byte word; a
        texture of halves': two per element)."""
        if is_half_texture(self._storage.gl):
            return 2 * self.size
        return 4 * word_count(self.size, self.dtype)

    @property
    def storage(self) -> str:
        """'buffer' (a GL shader storage buffer) or 'texture' (a GL 2D texture)."""
        return self._storage.gl.kind

    @property
    def storage_dtype(self) -> str:
        """How each element is stored: "float16" for a float32 tensor in a texture of halves
        (HALF_TEXTURE: a float16-activation model's), else its dtype's words."""
        return HALF if is_half_texture(self._storage.gl) else self.dtype

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    @property
    def gl_name(self) -> int:
        """The GL name (glo) of the buffer or texture holding the data."""
        self._check_alive()
        return self._storage.gl.glo

    @property
    def gl_object(self):
        """The GLObject (runtime/objects.py) holding the data, shared by views of this tensor:
        what execution plans and dispatch bind (no liveness check: the hot path asks)."""
        return self._storage.gl

    # -- lifetime ---------------------------------------------------------------------------
    def dispose(self) -> None:
        """Free the GPU memory now (when no view shares it). Disposing twice is harmless."""
        if self._disposed:
            return
        context.check_thread()   # refuse before any state changes, so the tensor stays usable
        self._disposed = True
        self._storage.drop()
        memory.unregister_tensor(self)

    def _check_alive(self) -> None:
        """Every use of the tensor's data goes through here: refuse disposed tensors and calls
        from a thread that does not own the GL context."""
        context.check_thread()
        if self._disposed:
            where = ""
            if self._created_at or self._disposed_at:
                where = (f" It was created at {self._created_at or '<not tracked>'} and disposed at "
                         f"{self._disposed_at or '<not tracked>'}.")
            else:
                where = " Turn on leak tracking (KERASGL_TRACK_LEAKS=1) to see where."
            raise DisposedError(
                f"Tensor of shape {list(self.shape)} ({self.dtype}) is disposed: its GPU memory was "
                f"freed and it cannot be used.{where}")

    # -- raw GL access for ops ----------------------------------------------------------------
    def gl_buffer(self):
        """The moderngl Buffer holding the data (ops convert texture tensors first)."""
        self._check_alive()
        if self._storage.gl.kind != "buffer":
            raise ShapeError("This tensor is stored in a texture; ops convert it with to_buffer().")
        return self._storage.gl.handle

    def gl_texture(self):
        self._check_alive()
        if self._storage.gl.kind != "texture":
            raise ShapeError("This tensor is stored in a buffer; use to_texture().")
        return self._storage.gl.handle

    # -- data -------------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """Copy the data back to a new numpy array."""
        self._check_alive()
        gl = self._storage.gl
        if recording.recorders:
            recording.recorders[-1].read_back(gl)
        raw = gl.handle.read()
        if is_half_texture(gl):          # float32 values stored as halves: read as float32
            flat = np.frombuffer(raw, dtype=np.float16)[: self.size].astype(np.float32)
            return flat.reshape(self.shape)
        # Halves two a word, element 2k in the low half: little-endian memory order is theirs.
        words = np.float16 if self.dtype == HALF else DTYPES[self.dtype]
        flat = np.frombuffer(raw, dtype=words)[: self.size]
        return as_numpy(flat.reshape(self.shape).copy(), self.dtype)

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array.astype(dtype) if dtype is not None else array

    def __repr__(self) -> str:
        state = "disposed" if self._disposed else self.storage
        return f"<kerasgl.Tensor shape={list(self.shape)} dtype={self.dtype} {state}>"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self):
        raise TypeError("The truth value of a kerasgl Tensor is ambiguous; read it with numpy().")

    # Operators and computing methods: attached by kerasgl/ops/tensor_methods.py.


# -------------------------------------------------------------------------------------------------
# Allocation
# -------------------------------------------------------------------------------------------------
def _check_storage(storage: str) -> None:
    if storage not in STORAGE_KINDS and storage != HALF_TEXTURE:
        raise ShapeError(f"storage must be 'buffer', 'texture' or '{HALF_TEXTURE}' (a texture of "
                         f"halves). Received {storage!r}.")


def is_half_texture(gl: GLObject) -> bool:
    """Whether a tensor's GL object is a texture of halves (HALF_TEXTURE)."""
    return gl.kind == "texture" and gl.handle is not None and gl.handle.dtype == HALF_TEXTURE_FORMAT


def texture_extent(size: int) -> tuple[int, int]:
    """(width, height) of the 2D texture that holds `size` elements, row by row."""
    max_size = context.limits().max_texture_size
    width = max(1, min(size, max_size))
    height = max(1, math.ceil(size / width))
    if height > max_size:
        raise GPULimitError(
            f"A tensor of {size} elements does not fit in one texture of at most "
            f"{max_size}x{max_size} texels (GL_MAX_TEXTURE_SIZE).")
    return width, height


# The advice of the error above; a model's predict at one sample, where no smaller batch exists,
# replaces it with its own (model.py).
SPLIT_ADVICE = " Split the work into smaller tensors (predict on Tensors: a smaller batch_size)."


def empty(shape, dtype="float32", storage: str = "buffer", data: bytes | None = None,
          label: str = "tensor") -> Tensor:
    """A new tensor with undefined contents (or `data`, raw bytes in C order)."""
    shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
    _check_storage(storage)
    return _allocate(shape, dtype, storage, data, label)


def _allocate(shape: tuple, dtype: str, storage: str, data: bytes | None, label: str) -> Tensor:
    ctx = context.get_context()
    nbytes = word_count(math.prod(shape), dtype) * 4
    if storage == "buffer":
        limit = context.limits().max_ssbo_block_bytes
        if nbytes > limit:
            raise GPULimitError(
                f"A tensor of shape {list(shape)} needs {nbytes} bytes, more than this GPU's "
                f"largest shader storage block (GL_MAX_SHADER_STORAGE_BLOCK_SIZE = {limit} bytes)."
                + SPLIT_ADVICE)
        # GL cannot allocate 0 bytes; an empty tensor still owns a 4-byte buffer.
        handle = ctx.buffer(data, reserve=0) if data else ctx.buffer(reserve=max(4, nbytes))
        gl = GLObject("buffer", handle, handle.size, label)
    else:
        width, height = texture_extent(math.prod(shape))
        halves = storage == HALF_TEXTURE and dtype == "float32"
        fmt = HALF_TEXTURE_FORMAT if halves else "f4" if dtype == "float32" else "i4"
        item = 2 if halves else 4
        if data is not None and halves:       # float32 words in, rounded to the nearest half
            data = np.frombuffer(data, np.float32).astype(np.float16).tobytes()
        if data is not None and len(data) < width * height * item:
            data = bytes(data) + bytes(width * height * item - len(data))
        handle = ctx.texture((width, height), 1, data=data, dtype=fmt)
        handle.filter = (0x2600, 0x2600)  # GL_NEAREST: no filtering, no mipmaps needed
        gl = GLObject("texture", handle, width * height * item, label)
    if recording.recorders:
        recording.recorders[-1].created(gl, data)
    return Tensor(memory.Storage(gl), shape, dtype)


def tensor(values, dtype=None, storage: str = "buffer", label: str = "tensor") -> Tensor:
    """Upload numpy data (or anything np.asarray accepts) to a new GPU tensor.
    float64 becomes float32 and int64 becomes int32, as Keras does on the GPU. `label` names its
    GL object (memory reports, GL debuggers): a layer's weight says whose it is."""
    if isinstance(values, Tensor):
        values._check_alive()
        values = values.numpy()
    array = np.asarray(values)
    if dtype is None:
        if array.dtype.kind == "b":
            dtype = "bool"
        elif array.dtype.kind == "f":
            dtype = "float32"
        elif array.dtype.kind in "iu":
            dtype = "int32"
        else:
            raise ShapeError(f"Cannot make a tensor from data of dtype {array.dtype}: kerasgl tensors "
                             "are float32, int32 or bool.")
    dtype = normalize_dtype(dtype)
    if dtype == "bool":
        array = array != 0                   # any numbers: nonzero is true, as Keras's cast
    # astype, not ascontiguousarray (which makes 0-d arrays 1-d); tobytes() is C order anyway.
    array = array.astype(DTYPES[dtype], copy=False)
    return empty(array.shape, dtype, storage, data=array.tobytes() if array.size else None,
                 label=label)


def half_tensor(values, label: str = "tensor") -> Tensor:
    """Upload float data as a float16 tensor (HALF): each value rounded to the nearest IEEE half,
    two per 32-bit word, in a buffer. For weights (load_model's storage_dtype="float16"): only
    the kernels that unpack halves read it. InputValueError for a finite value beyond the half's
    range (|x| > 65504 rounds to infinity), which would change results far beyond rounding."""
    array = np.asarray(values, dtype=np.float32)
    with np.errstate(over="ignore"):          # an overflow is refused below, by name
        halves = np.ascontiguousarray(array, dtype=np.float16).reshape(-1)
    overflow = np.isinf(halves) & np.isfinite(array.reshape(-1))
    if overflow.any():
        largest = float(np.abs(array.reshape(-1)[overflow]).max())
        raise InputValueError(
            f"Weight '{label}' holds {int(overflow.sum())} value(s) beyond float16's range (up to "
            f"{largest:.6g}; the largest half is 65504): stored as float16 they would become "
            "infinite. Load this model with storage_dtype='float32'.")
    if halves.size % 2:
        halves = np.concatenate([halves, np.zeros(1, np.float16)])
    return _allocate(array.shape, HALF, "buffer", halves.tobytes() if halves.size else None, label)


def as_numpy(words: np.ndarray, dtype: str) -> np.ndarray:
    """The array a tensor of `dtype` reads as, from its 32-bit words (bool: nonzero)."""
    return words != 0 if dtype == "bool" else words


def retag(source: Tensor, dtype: str) -> Tensor:
    """A view of `source` read as another dtype of the same words: bool as int32 (0 / 1), or a
    0 / 1 int32 as bool. No copy."""
    source._check_alive()
    return Tensor(source._storage, source.shape, normalize_dtype(dtype))


def view(source: Tensor, shape, dtype: str | None = None) -> Tensor:
    """A tensor of another shape sharing `source`'s storage (no copy, no new GL object); `dtype`
    re-reads its 32-bit words as another dtype (bool <-> int32 words are the same 0 / 1)."""
    source._check_alive()
    return Tensor(source._storage, normalize_shape(shape),
                  source.dtype if dtype is None else normalize_dtype(dtype))
