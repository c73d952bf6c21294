"""kerasgl's exception classes. Every error kerasgl raises on purpose is a KerasGLError."""


class KerasGLError(Exception):
    """Base class of every error kerasgl raises on purpose."""


class GLContextError(KerasGLError):
    """No usable OpenGL 4.3 context (missing EGL/Mesa, wrong thread, lost context)."""


class DisposedError(KerasGLError):
    """A tensor (or model) was used after its GPU memory was freed."""


class ShapeError(KerasGLError, ValueError):
    """Shapes or dtypes do not fit the operation or the model's inputs."""


class ModelFileError(KerasGLError):
    """A model file is not a Keras model, is damaged, or its weights do not match its config."""


class UnsupportedLayerError(KerasGLError):
    """A model uses layers (or layer options) that kerasgl cannot run."""


class GPULimitError(KerasGLError):
    """A request exceeds a limit of this GPU's OpenGL implementation."""
