"""kerasgl's exception classes. Every error kerasgl raises on purpose is a KerasGLError, and also
the built-in exception a Python (or Keras) user would catch for its kind of problem: a bad value
or a damaged file is a ValueError, an argument of the wrong type a TypeError, a layer kerasgl
cannot run a NotImplementedError, a problem of the GPU or its context a RuntimeError.

    try:
        model = kg.load_model(path)
    except ValueError: ...        # catches ModelFileError (and ShapeError, InputValueError, ...)
"""


class KerasGLError(Exception):
    """Base class of every error kerasgl raises on purpose."""


class GLContextError(KerasGLError, RuntimeError):
    """No usable OpenGL 4.3 context (missing EGL/Mesa, wrong thread, lost context)."""


class DisposedError(KerasGLError, RuntimeError):
    """A tensor (or model) was used after its GPU memory was freed."""


class ShapeError(KerasGLError, ValueError):
    """Shapes or dtypes do not fit the operation or the model's inputs."""


class InputValueError(KerasGLError, ValueError):
    """An argument or input of the right type whose value kerasgl cannot use: batch_size 0, an
    unknown layer named in predict(outputs=...), an Embedding index outside its table."""


class InputTypeError(KerasGLError, TypeError):
    """An argument of the wrong type: a model path that is not a path, batch_size "8", predict
    input that is not numbers."""


class ModelFileError(KerasGLError, ValueError):
    """A model file is not a Keras model, is damaged, or its weights do not match its config."""


class UnsupportedLayerError(KerasGLError, NotImplementedError):
    """A model uses layers (or layer options) that kerasgl cannot run."""


class GPULimitError(KerasGLError, RuntimeError):
    """A request exceeds a limit of this GPU's OpenGL implementation."""


class SettingError(KerasGLError, ValueError):
    """A KERASGL_* environment variable (or a settings override) holds a value it does not take."""
