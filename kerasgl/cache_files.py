"""kerasgl's small JSON files under the user's cache folder ($XDG_CACHE_HOME/kerasgl, default
~/.cache/kerasgl): the kernel choices measured per device (tuning.py) and the model files whose
first predict has been compiled here (compile_ahead.py). Never required: an unreadable file reads
as empty and an unwritable one is reported by write_dict's result, never raised."""
from __future__ import annotations

import json
import os


def path_of(name: str) -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kerasgl", name)


def read_dict(name: str) -> dict:
    try:
        with open(path_of(name), encoding="utf-8") as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def write_dict(name: str, data: dict) -> bool:
    """Replace the file at once (written aside, then renamed: a reader never sees half a file).
    False where it cannot be written."""
    path = path_of(name)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.replace(temporary, path)
    except OSError:
        return False
    return True
