"""Row lookup (Embedding): out[..., :] = table[indices[...], :].

Out-of-range indices cannot be seen on the CPU without reading the indices back, so the shader
counts them into a flag buffer: with check=True (the default) an InputValueError names the bad index.
Inside a predict the flags are read with the outputs at the end of the call (ops/gpu_checks.py),
so a model with an Embedding is planned like any other; called on its own, gather reads the 8
bytes back right after the dispatch. With check=False there are no flags and the rows of bad
indices are NaN, which is what Keras on JAX returns. Negative indices in [-V, -1] count from the
end, as in numpy and jnp.take. The table may be float16 (a model loaded with
storage_dtype="float16"): the shader unpacks the rows it copies (shaders/half_weights.glsl)."""
from __future__ import annotations

from ..errors import ShapeError
from ..tensors import ownership
from ..tensors.tensor import HALF, Tensor, empty, tensor
from . import dispatch, gpu_checks, half_weights
from .storage_ops import any_storage


@any_storage
def gather_rows(table: Tensor, indices: Tensor, check: bool = True,
                who: str = "gather_rows") -> Tensor:
    """table: [V, D] float32 (or float16 weights); indices: int32 (or float32, truncated as a
    cast to int32) of any shape. Returns indices.shape + [D]. `who` opens the out-of-range
    error ("Layer 'emb' (Embedding)")."""
    for what, t in (("table", table), ("indices", indices)):
        if not isinstance(t, Tensor):
            raise TypeError(f"gather_rows: {what} must be a kerasgl Tensor, not {type(t).__name__}.")
        t._check_alive()
    if table.ndim != 2 or table.dtype not in ("float32", HALF):
        raise ShapeError(f"gather_rows: table must be a 2-D float32 (or float16) tensor. Received "
                         f"{table.dtype} of shape {list(table.shape)}.")
    rows, dim = table.shape

    def compute():
        out = empty(tuple(indices.shape) + (dim,))
        if out.size == 0:
            return out
        flags = tensor(gpu_checks.zeros(), label="index check") if check else None
        dispatch.run("embedding_rows.comp",
                     defines={"IDX_FLOAT": indices.dtype == "float32", "CHECK": check,
                              **half_weights.defines(table)},
                     buffers=[table, indices, out, flags if check else out],
                     uniforms={"n": out.size, "rows": rows, "dim": dim},
                     groups=dispatch.groups_for(out.size))
        if check:
            facts = ("index", who, rows)
            # defer keeps the flags: the collector reads and frees them at the call's end.
            if not gpu_checks.defer(flags, facts):
                gpu_checks.check_now(flags, facts)
        return out
    return ownership.tidy.run(compute)
