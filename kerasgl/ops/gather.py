"""Row lookup (Embedding): out[..., :] = table[indices[...], :].

Out-of-range indices cannot be seen on the CPU without reading the indices back, so the shader
counts them: with check=True (the default) gather reads back 8 bytes after the dispatch and raises
ShapeError naming a bad index. With check=False nothing is read back and the rows of bad indices
are NaN, which is what Keras on JAX returns. Negative indices in [-V, -1] count from the end, as
in numpy and jnp.take."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..tensors.tensor import Tensor, empty, tensor
from . import dispatch
from .storage_ops import any_storage


@any_storage
def gather_rows(table: Tensor, indices: Tensor, check: bool = True) -> Tensor:
    """table: [V, D] float32; indices: int32 (or float32, truncated as a cast to int32) of any
    shape. Returns indices.shape + [D]."""
    for what, t in (("table", table), ("indices", indices)):
        if not isinstance(t, Tensor):
            raise TypeError(f"gather_rows: {what} must be a kerasgl Tensor, not {type(t).__name__}.")
        t._check_alive()
    if table.ndim != 2 or table.dtype != "float32":
        raise ShapeError(f"gather_rows: table must be a 2-D float32 tensor. Received {table.dtype} "
                         f"of shape {list(table.shape)}.")
    rows, dim = table.shape
    out = empty(tuple(indices.shape) + (dim,))
    if out.size == 0:
        return out
    flags = tensor(np.zeros(2, np.int32)) if check else None
    try:
        dispatch.run("gather.comp", defines={"IDX_FLOAT": indices.dtype == "float32", "CHECK": check},
                     buffers=[table, indices, out, flags if check else out],
                     uniforms={"n": out.size, "rows": rows, "dim": dim},
                     groups=dispatch.groups_for(out.size))
        if check:
            count, example = (int(v) for v in flags.numpy())
            if count:
                raise ShapeError(f"{count} index(es) out of range for a lookup table of {rows} rows "
                                 f"(valid: 0 to {rows - 1}); for example {example}.")
    except BaseException:
        out.dispose()
        raise
    finally:
        if flags is not None:
            flags.dispose()
    return out
