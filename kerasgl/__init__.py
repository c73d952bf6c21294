"""kerasgl: run trained Keras models on any OpenGL 4.3 GPU, with explicit GPU memory control."""
from .runtime.context import info, select_device, shutdown
from .runtime.driver_objects import DriverObjects, driver_objects
from .errors import (DisposedError, GLContextError, GPULimitError, InputTypeError, InputValueError,
                     KerasGLError, ModelFileError, ShapeError, UnsupportedLayerError)
from .gl_dump import gl_objects
from .model import Model, load_model, load_model_from_json
from .layers.custom.custom_layer import CustomLayer
from .ops.layout import transpose
from .ops.random import random_normal, random_uniform
from .ops.reduce import reduce_max, reduce_mean, reduce_min, reduce_sum
from .ops.creation import fill, ones, zeros
from .profiler import Profile, device_peak, profile
from .tensors.ownership import (KindUsage, LeakError, MemoryInfo, dispose, keep, leak_report,
                                leak_tracking_enabled, memory, tidy, track_leaks)
from .runtime.shaders import ShaderError, clear_program_cache
from .tensors.model_registry import live_models
from .tensors.tensor import Tensor, empty, tensor
from .worker import Worker, WorkerModel
# kg.load_model reads KerasHub's models through kerasgl.kerashub (its namespace: kg.kerashub)
from . import kerashub as _kerashub  # noqa: E402,F401

__version__ = "0.1.0"
