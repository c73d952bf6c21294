"""kerasgl: run trained Keras models on any OpenGL 4.3 GPU, with explicit GPU memory control."""
from .context import info, select_device
from .errors import (DisposedError, GLContextError, GPULimitError, KerasGLError, ModelFileError,
                     ShapeError, UnsupportedLayerError)
from .ownership import (LeakError, MemoryInfo, dispose, keep, leak_report, memory, tidy, track_leaks)
from .tensor import Tensor, fill, ones, tensor, zeros

__version__ = "0.1.0"
