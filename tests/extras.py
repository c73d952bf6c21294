"""Optional dependencies of some tests (serving, Ray, plots: all in the test extra). Outside CI a
missing one skips its tests, naming the extra; under CI (CI=true), where .ci/run installs every
extra, it fails the run instead: a skip there would hide a test that never ran."""
import importlib
import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(module: str):
    """The imported module, or a skip (outside CI) naming `pip install '.[test]'`."""
    if in_ci():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason="needs the test extra: pip install '.[test]'")
