"""Layer classes keras.applications defines for its own models and saves in their files
(LayerScale, CustomScaleLayer).
Importing this package registers its layer classes."""
from . import scale_layers  # noqa: F401
