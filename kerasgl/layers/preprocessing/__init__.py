"""Keras's preprocessing layers (keras/src/layers/preprocessing) as predict runs them:
numeric, image, category, lookup and hashing, audio.
Importing this package registers its layer classes."""
from . import audio  # noqa: F401
from . import category  # noqa: F401
from . import farmhash  # noqa: F401
from . import hashing  # noqa: F401
from . import image_adjust  # noqa: F401
from . import image_preprocessing  # noqa: F401
from . import lookup  # noqa: F401
from . import rescaling_normalization  # noqa: F401
