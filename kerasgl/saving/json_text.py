"""Model configs as JSON: parsed with a size bound, and refused when nested too deeply.

Every reader of the config (the normaliser in config.py, nodes.py, the graph) walks it
recursively, so a config nested thousands deep would end in RecursionError somewhere past
saving/. The nesting is measured once here, without recursion, right after parsing (and for
configs passed in as dicts), so everything downstream may recurse freely.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import ModelFileError
from .limits import MAX_CONFIG_BYTES, MAX_JSON_DEPTH, MAX_JSON_VALUES, readable_size


def parse_config_json(text: str | bytes, source: str, what: str) -> Any:
    """json.loads of a model config (`what` names it in errors: "config.json", ...)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ModelFileError(f"{source}: {what} is {readable_size(len(text))}, more than the "
                             f"{readable_size(MAX_CONFIG_BYTES)} a model config may take")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelFileError(f"{source}: {what} is not UTF-8 text: {exc}") from exc
    try:
        value = json.loads(text)
    except RecursionError as exc:
        raise ModelFileError(f"{source}: {what} is nested deeper than the "
                             f"{MAX_JSON_DEPTH} levels a model config may have") from exc
    except ValueError as exc:       # JSONDecodeError, and numbers of more than 4300 digits
        raise ModelFileError(f"{source}: {what} is not valid JSON: {exc}") from exc
    check_nesting(value, source, what)
    return value


def check_nesting(value: Any, source: str, what: str) -> None:
    """ModelFileError when lists/dicts nest deeper than MAX_JSON_DEPTH (iterative walk; a dict
    handed in by a caller may share or even contain itself, so values are also counted)."""
    stack = [(value, 1)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth > MAX_JSON_DEPTH:
            raise ModelFileError(f"{source}: {what} is nested deeper than the "
                                 f"{MAX_JSON_DEPTH} levels a model config may have")
        seen += len(children)
        if seen > MAX_JSON_VALUES:
            raise ModelFileError(f"{source}: {what} holds more than {MAX_JSON_VALUES} values")
        stack.extend((child, depth + 1) for child in children)
