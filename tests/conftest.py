"""Shared fixtures. Every test runs under kerasgl.testing.no_leaks (autouse below).

Under CI (CI=true) a missing GL context fails the whole run: tests are never skipped for it.
"""
import os

import pytest

os.environ.setdefault("KERAS_BACKEND", "jax")
# No compile-ahead helper processes for the suite's models (kerasgl/devices/llvmpipe/compile_ahead.py): they cannot
# change a result, only add load; tests/test_compile_ahead.py turns them on where it checks them.
os.environ.setdefault("KERASGL_COMPILE_AHEAD", "0")

import kerasgl  # noqa: E402
from kerasgl.testing import no_leaks  # noqa: E402,F401


def pytest_addoption(parser):
    parser.addoption("--long-fuzz", action="store_true", default=False,
                     help="tests/test_hostile_files.py: run the long hostile-file corpus "
                          "(thousands of files, 6 GiB zip bombs; tens of minutes)")
    parser.addoption("--applications", choices=("default", "all"), default="default",
                     help="tests/test_applications.py: 'all' runs every keras.applications model "
                          "in both formats (about an hour on 2 cores); default: a representative few")


def pytest_sessionstart(session):
    try:
        kerasgl.info()
    except kerasgl.GLContextError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise pytest.UsageError(f"CI=true and no GL context: {exc}")
        session.config._kerasgl_no_gl = str(exc)


def pytest_collection_modifyitems(config, items):
    reason = getattr(config, "_kerasgl_no_gl", None)
    if reason:
        # A skipif placed first: pytest evaluates skipif conditions before skip marks, and this one
        # must win over a test's own (which may ask the driver).
        skip = pytest.mark.skipif(True, reason=f"no OpenGL 4.3 context: {reason}")
        for item in items:
            item.add_marker(skip, append=False)


@pytest.fixture(autouse=True)
def _every_test_checks_leaks(no_leaks):
    yield


@pytest.fixture(autouse=True, scope="module")
def _forget_keras_state_after_each_module():
    """What one test module made in Keras and JAX goes when the module ends: the models Keras
    keeps reachable through its global state, JAX's compiled functions and their buffers, and
    the heap memory they held. Kept across the whole session they let the suite's memory grow
    from module to module (7.7 GB was reported before this; 6.1 GB measured with the clearing
    alone, 4.3 GB with malloc_trim too: README)."""
    yield
    import gc
    import sys
    if "keras" in sys.modules:
        sys.modules["keras"].backend.clear_session()
    if "jax" in sys.modules:
        sys.modules["jax"].clear_caches()
    gc.collect()
    _return_freed_memory_to_the_system()


def _return_freed_memory_to_the_system():
    """glibc keeps what Python, XLA and numpy freed in its heap, so the process's resident memory
    stays at its highest module's (keras.applications' models: +3 GB, held through every later
    module): malloc_trim hands it back. Nothing where libc is not glibc."""
    import ctypes
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
