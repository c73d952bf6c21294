"""keras.ops.math (keras/src/ops/math.py) as recorded in Keras 3 graphs: reductions (logsumexp,
top_k, in_top_k, cdist) and signal (FFTs, STFT, extract_sequences).
Importing this package registers its op nodes."""
from . import reductions  # noqa: F401
from . import signal  # noqa: F401
