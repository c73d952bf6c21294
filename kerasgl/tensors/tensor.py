"""Tensor: an n-dimensional float32 (or int32) array living in a GL buffer or texture.

Thin on purpose: every computation it offers is a call into `ops/`. Its GL object belongs to its
Storage (ownership.py), which may be shared with views made by reshape.
"""
from __future__ import annotations

import math

import numpy as np

from ..runtime import context
from . import ownership as memory
from ..errors import DisposedError, GPULimitError, ShapeError

DTYPES = {"float32": np.float32, "int32": np.int32}
STORAGE_KINDS = ("buffer", "texture")


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
        raise ShapeError(f"kerasgl tensors are float32 or int32. Received dtype {name}.")
    return name


class Tensor:
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
        return self.size * 4

    @property
    def storage(self) -> str:
        """'buffer' (a GL shader storage buffer) or 'texture' (a GL 2D texture)."""
        return self._storage.gl.kind

    @property
    def is_disposed(self) -> bool:
        return self._disposed

    @property
    def gl_name(self) -> int:
        """The GL name (glo) of the buffer or texture holding the data."""
        self._check_alive()
        return self._storage.gl.glo

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
        if memory._recorders:
            memory._recorders[-1].read_back(gl)
        raw = gl.handle.read()
        flat = np.frombuffer(raw, dtype=DTYPES[self.dtype])[: self.size]
        return flat.reshape(self.shape).copy()

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array.astype(dtype) if dtype is not None else array

    def to_texture(self) -> "Tensor":
        """A new tensor with the same data in a GL texture."""
        from ..ops import storage_ops
        return storage_ops.to_texture(self)

    def to_buffer(self) -> "Tensor":
        """A new tensor with the same data in a GL shader storage buffer."""
        from ..ops import storage_ops
        return storage_ops.to_buffer(self)

    def __repr__(self) -> str:
        state = "disposed" if self._disposed else self.storage
        return f"<kerasgl.Tensor shape={list(self.shape)} dtype={self.dtype} {state}>"

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __bool__(self):
        raise TypeError("The truth value of a kerasgl Tensor is ambiguous; read it with numpy().")

    # -- operators and methods: thin calls into ops ------------------------------------------
    def _binary(self, other, op, reverse=False):
        from ..ops import elementwise
        return elementwise.binary(op, other, self) if reverse else elementwise.binary(op, self, other)

    def __add__(self, other): return self._binary(other, "add")
    def __radd__(self, other): return self._binary(other, "add", reverse=True)
    def __sub__(self, other): return self._binary(other, "sub")
    def __rsub__(self, other): return self._binary(other, "sub", reverse=True)
    def __mul__(self, other): return self._binary(other, "mul")
    def __rmul__(self, other): return self._binary(other, "mul", reverse=True)
    def __truediv__(self, other): return self._binary(other, "div")
    def __rtruediv__(self, other): return self._binary(other, "div", reverse=True)
    def __pow__(self, other): return self._binary(other, "pow")

    def __neg__(self):
        from ..ops import elementwise
        return elementwise.unary("neg", self)

    def __matmul__(self, other):
        from ..ops import matmul
        return matmul.matmul(self, other)

    def __rmatmul__(self, other):
        from ..ops import matmul
        return matmul.matmul(other, self)

    def _unary(self, op):
        from ..ops import elementwise
        return elementwise.unary(op, self)

    def exp(self): return self._unary("exp")
    def log(self): return self._unary("log")
    def sqrt(self): return self._unary("sqrt")
    def abs(self): return self._unary("abs")
    def neg(self): return self._unary("neg")
    def relu(self): return self._unary("relu")
    def sigmoid(self): return self._unary("sigmoid")
    def tanh(self): return self._unary("tanh")

    def maximum(self, other): return self._binary(other, "maximum")
    def minimum(self, other): return self._binary(other, "minimum")

    def matmul(self, other):
        from ..ops import matmul
        return matmul.matmul(self, other)

    def reshape(self, *shape):
        from ..ops import layout
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return layout.reshape(self, shape)

    def transpose(self, *axes):
        from ..ops import layout
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):
            axes = axes[0]
        return layout.transpose(self, axes or None)

    @property
    def T(self):
        return self.transpose()

    def sum(self, axis=None, keepdims=False):
        from ..ops import reduce
        return reduce.reduce("sum", self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        from ..ops import reduce
        return reduce.reduce("mean", self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        from ..ops import reduce
        return reduce.reduce("max", self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        from ..ops import reduce
        return reduce.reduce("min", self, axis, keepdims)


# -------------------------------------------------------------------------------------------------
# Allocation
# -------------------------------------------------------------------------------------------------
def _check_storage(storage: str) -> None:
    if storage not in STORAGE_KINDS:
        raise ShapeError(f"storage must be 'buffer' or 'texture'. Received {storage!r}.")


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


def empty(shape, dtype="float32", storage: str = "buffer", data: bytes | None = None,
          label: str = "tensor") -> Tensor:
    """A new tensor with undefined contents (or `data`, raw bytes in C order)."""
    shape, dtype = normalize_shape(shape), normalize_dtype(dtype)
    _check_storage(storage)
    ctx = context.get_context()
    nbytes = math.prod(shape) * 4
    if storage == "buffer":
        limit = context.limits().max_ssbo_block_bytes
        if nbytes > limit:
            raise GPULimitError(
                f"A tensor of shape {list(shape)} needs {nbytes} bytes, more than this GPU's "
                f"largest shader storage block (GL_MAX_SHADER_STORAGE_BLOCK_SIZE = {limit} bytes). "
                "Split the work into smaller tensors (predict on Tensors: a smaller batch_size).")
        # GL cannot allocate 0 bytes; an empty tensor still owns a 4-byte buffer.
        handle = ctx.buffer(data, reserve=0) if data else ctx.buffer(reserve=max(4, nbytes))
        gl = memory.GLObject("buffer", handle, handle.size, label)
    else:
        width, height = texture_extent(math.prod(shape))
        fmt = "f4" if dtype == "float32" else "i4"
        if data is not None and len(data) < width * height * 4:
            data = bytes(data) + bytes(width * height * 4 - len(data))
        handle = ctx.texture((width, height), 1, data=data, dtype=fmt)
        handle.filter = (0x2600, 0x2600)  # GL_NEAREST: no filtering, no mipmaps needed
        gl = memory.GLObject("texture", handle, width * height * 4, label)
    if memory._recorders:
        memory._recorders[-1].created(gl, data)
    return Tensor(memory.Storage(gl), shape, dtype)


def tensor(values, dtype=None, storage: str = "buffer") -> Tensor:
    """Upload numpy data (or anything np.asarray accepts) to a new GPU tensor.
    float64 becomes float32 and int64 becomes int32, as Keras does on the GPU."""
    if isinstance(values, Tensor):
        values._check_alive()
        values = values.numpy()
    array = np.asarray(values)
    if dtype is None:
        if array.dtype.kind == "f" or array.dtype.kind == "b":
            dtype = "float32"
        elif array.dtype.kind in "iu":
            dtype = "int32"
        else:
            raise ShapeError(f"Cannot make a tensor from data of dtype {array.dtype}: kerasgl tensors "
                             "are float32 or int32.")
    dtype = normalize_dtype(dtype)
    # astype, not ascontiguousarray (which makes 0-d arrays 1-d); tobytes() is C order anyway.
    array = array.astype(DTYPES[dtype], copy=False)
    return empty(array.shape, dtype, storage, data=array.tobytes() if array.size else None)


def fill(shape, value, dtype="float32", storage: str = "buffer") -> Tensor:
    """A new tensor with every element equal to `value`, filled on the GPU."""
    from ..ops import creation
    return creation.fill(shape, value, dtype, storage)


def zeros(shape, dtype="float32", storage: str = "buffer") -> Tensor:
    return fill(shape, 0, dtype, storage)


def ones(shape, dtype="float32", storage: str = "buffer") -> Tensor:
    return fill(shape, 1, dtype, storage)


def view(source: Tensor, shape) -> Tensor:
    """A tensor of another shape sharing `source`'s storage (no copy, no new GL object)."""
    source._check_alive()
    return Tensor(source._storage, normalize_shape(shape), source.dtype)
