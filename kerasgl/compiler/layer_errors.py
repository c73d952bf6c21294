"""Errors raised while a model loads name what they are about: the layer here, the file in
model.py (Model.from_spec adds the path).

A layer's constructor, build and shape inference check its config and its weights; an op they
call (ops/rnn.py: "kernel and recurrent kernel do not match") knows neither the layer nor the
file. `about_layer` gives such an error the layer's name and class, keeping the error's class:

    with about_layer(spec.name, spec.class_name):
        layer = cls(spec, keras_major)

and turns what a layer's config code raises on a config it did not expect (a TypeError for
`units: "abc"`, a KeyError for a missing key) into a ModelFileError: a config value that does not
fit is a damaged file, not a bug to show as a raw traceback (the original stays chained).
"""
from __future__ import annotations

from contextlib import contextmanager

from ..errors import DisposedError, GLContextError, KerasGLError, ModelFileError

# Errors about the process (the context, a freed tensor), not about the file: passed on as they are.
NOT_ABOUT_THE_FILE = (GLContextError, DisposedError)
# What plain Python code raises on config values of the wrong type or shape.
CONFIG_ACCIDENTS = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError,
                    ZeroDivisionError)


def with_prefix(exc: KerasGLError, prefix: str) -> KerasGLError | None:
    """The same kind of error with `prefix` before its message, or None when its class cannot be
    made from one message."""
    try:
        return type(exc)(f"{prefix}{exc}")
    except Exception:
        return None


def _naming(exc: KerasGLError, name: str, where: str) -> KerasGLError | None:
    """exc naming the layer and its class, or None when it does already (or cannot be remade)."""
    message = str(exc)
    if where in message:
        return None
    bare = f"Layer '{name}'"          # named without its class: the class is added after it
    if message.startswith(bare) or f": {bare}" in message:
        try:
            return type(exc)(message.replace(bare, where, 1))
        except Exception:
            return None
    if f"'{name}'" in message:        # named some other way ("layer 'x' is called on ...")
        return None
    return with_prefix(exc, f"{where}: ")


@contextmanager
def about_layer(name: str, class_name: str, reading_config: bool = False):
    """Name the layer in a KerasGLError raised inside that does not name it already. With
    reading_config (the layer's constructor, which reads its config), plain Python errors become
    ModelFileError naming the layer."""
    where = f"Layer '{name}' ({class_name})"
    try:
        yield
    except NOT_ABOUT_THE_FILE:
        raise
    except KerasGLError as exc:
        renamed = _naming(exc, name, where)
        if renamed is None:
            raise
        raise renamed from exc
    except CONFIG_ACCIDENTS as exc:
        if not reading_config:
            raise
        raise ModelFileError(f"{where}: its config holds a value kerasgl cannot use "
                             f"({type(exc).__name__}: {exc}).") from exc
