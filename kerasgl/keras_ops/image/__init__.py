"""keras.ops.image (keras/src/ops/image.py) as recorded in Keras 3 graphs: operations (resize,
pad/crop, colour, filters, patches, SSIM) and geometric (affine and perspective transforms).
Importing this package registers its op nodes."""
from . import geometric  # noqa: F401
from . import operations  # noqa: F401
