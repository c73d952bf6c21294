"""keras.ops.numpy (keras/src/ops/numpy.py) as recorded in Keras 3 graphs, one module per family:
arithmetic, elementwise_math, logic, bitwise, reductions, statistics, sorting, shapes, getitem,
joining, rearranging, values, ranges, products.
Importing this package registers its op nodes."""
from . import arithmetic  # noqa: F401
from . import bitwise  # noqa: F401
from . import elementwise_math  # noqa: F401
from . import getitem  # noqa: F401
from . import joining  # noqa: F401
from . import logic  # noqa: F401
from . import products  # noqa: F401
from . import ranges  # noqa: F401
from . import rearranging  # noqa: F401
from . import reductions  # noqa: F401
from . import shapes  # noqa: F401
from . import sorting  # noqa: F401
from . import statistics  # noqa: F401
from . import values  # noqa: F401
