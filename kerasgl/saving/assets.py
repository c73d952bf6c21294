"""A layer's asset file in a `.keras` archive: `assets/<layer path>/<file>` (Keras's
saving_lib writes what a layer's save_assets puts in its directory, at the same layer path as its
weights: `layers/<snake_case(class name)>[_N]`). Adapted lookup layers keep their vocabulary
there (compiler/host_stage.py reads it through this, handed down by model.py)."""
from __future__ import annotations

import zipfile

from .keras_zip import _saved_layers, _unique_name, snake_case
from .layer_rules import saved_class_name
from .limits import MAX_CONFIG_BYTES
from .spec import ModelSpec
from .zip_archive import KerasZip


def layer_asset(spec: ModelSpec, layer_name: str, filename: str) -> bytes | None:
    """The bytes of the asset `filename` of the top-level layer `layer_name`, or None where the
    file is not a .keras archive or holds no such asset."""
    source = spec.source
    if not isinstance(source, str) or not zipfile.is_zipfile(source):
        return None
    used: dict[str, int] = {}
    path = None
    for layer in _saved_layers(spec):
        name = _unique_name(snake_case(saved_class_name(layer.class_name)), used)
        if layer.name == layer_name:
            path = f"assets/layers/{name}/{filename}"
    if path is None:
        return None
    with KerasZip(source) as archive:
        return archive.read(path, MAX_CONFIG_BYTES) if path in archive else None
