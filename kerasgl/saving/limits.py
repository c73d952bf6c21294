"""How much a model file may make kerasgl read and allocate.

Every size a file declares (a zip member's uncompressed size, a dataset's shape, an attribute's
dataspace) is checked against these bounds, and against the bytes the file really holds, before
anything is read or allocated: a damaged or hostile file fails fast with a ModelFileError instead
of exhausting memory. The bounds are far above what Keras writes:
- Keras stores .keras members uncompressed and never compresses HDF5 datasets, so any compression
  is a re-pack; real weights compress by a few times at most (all-zero arrays by more), and a
  member or dataset that expands over MAX_EXPANSION times is refused once it is bigger than
  EXPANSION_FLOOR (below that the memory is harmless whatever the ratio);
- a model config is a few MB for a thousand layers; nesting is about 10 levels per nested model.
"""
from __future__ import annotations

MAX_CONFIG_BYTES = 32 << 20         # config.json, the model_config attribute, architecture JSON
MAX_METADATA_BYTES = 1 << 20        # metadata.json
MAX_WEIGHTS_BYTES = 64 << 30        # model.weights.h5 in a zip; all arrays of one file together
MAX_EXPANSION = 100                 # uncompressed / stored, for zip members and HDF5 datasets
EXPANSION_FLOOR = 64 << 20          # sizes below this are accepted at any compression ratio
SMALL_DATASET_BYTES = 1 << 20       # an uncompressed dataset this small may be unallocated
MAX_CHUNK_BYTES = 64 << 20          # an HDF5 chunk larger than this (and than its dataset)
MAX_JSON_DEPTH = 100                # nesting of lists/dicts in a config
MAX_JSON_VALUES = 20_000_000        # values in a config passed in as a dict (shared sub-objects)
MAX_GROUP_DEPTH = 64                # nesting of HDF5 groups under a layer's weights group
MAX_SOFT_LINK_HOPS = 8              # soft links followed in a row (inside the weights tree)
MAX_ATTR_STRINGS = 1_000_000        # entries of a name list such as layer_names


def expansion_allowed(declared: int, stored: int) -> bool:
    """Whether `declared` bytes may come out of `stored` compressed ones."""
    return declared <= EXPANSION_FLOOR or declared <= MAX_EXPANSION * stored


def array_budget(file_size: int) -> int:
    """The most bytes all arrays of a file of `file_size` bytes may declare together."""
    return min(MAX_WEIGHTS_BYTES, max(EXPANSION_FLOOR, MAX_EXPANSION * file_size))


def readable_size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"
