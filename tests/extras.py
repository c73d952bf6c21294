"""Optional dependencies of some tests (serving, Ray, plots: all in the test extra). Outside CI a
missing one skips its tests, naming the extra; under CI (CI=true), where .ci/run installs every
extra, it fails the run instead: a skip there would hide a test that never ran."""
import importlib
import os

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(module: str, install: str = "pip install '.[test]'"):
    """The imported module, or a skip (outside CI) saying how to install it (`install`)."""
    if in_ci():
        return importlib.import_module(module)
    return pytest.importorskip(module, reason=f"needs {module}: {install}")


# keras_hub, the reference of tests/test_kerashub*.py, is no extra: scripts/install.sh --test
# installs it with --no-deps (its tensorflow-text requirement would bring all of TensorFlow).
KERAS_HUB_INSTALL = "bash scripts/install.sh --test (keras-hub without TensorFlow)"
