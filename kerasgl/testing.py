"""Test helpers for kerasgl users and for kerasgl's own suite.

`leaks_checked()` is a context manager: the block fails with kerasgl.LeakError if it leaves more
tensors alive than it found, naming each leaked tensor's creation site (leak tracking is on inside
the block), and the leaked tensors are freed. It needs nothing but kerasgl.

`no_leaks` is the same check as a pytest fixture (pytest is imported when the fixture is first
asked for: kerasgl itself does not depend on pytest). Use it from a conftest.py:

    from kerasgl.testing import no_leaks  # noqa: F401  (pytest finds the fixture by name)
    pytestmark = pytest.mark.usefixtures("no_leaks")
"""
from __future__ import annotations

from contextlib import contextmanager

from .tensors import ownership


def live_tensor_ids() -> set:
    return {id(t) for t in ownership.live_tensors()}


@contextmanager
def leaks_checked():
    """Raise LeakError when the block leaves tensors alive that were not alive before it."""
    before = live_tensor_ids()
    with ownership.track_leaks(True):
        yield
        leaked = [t for t in ownership.live_tensors() if id(t) not in before]
    if leaked:
        # Free them so one leaking test does not fail every test after it.
        report = ownership.leak_report()
        for tensor in leaked:
            tensor.dispose()
        raise ownership.LeakError(f"The test left {len(leaked)} tensor(s) alive.\n{report}")


def _no_leaks_fixture():
    try:
        import pytest
    except ImportError as exc:
        raise ImportError(
            "kerasgl.testing.no_leaks is a pytest fixture and pytest is not installed "
            "(pip install pytest, or kerasgl[test]); kerasgl.testing.leaks_checked() is the same "
            "check without pytest.") from exc

    @pytest.fixture
    def no_leaks():
        """Fail the test if it leaves tensors alive (see leaks_checked)."""
        try:
            with leaks_checked():
                yield
        except ownership.LeakError as exc:
            pytest.fail(str(exc), pytrace=False)

    return no_leaks


def __getattr__(name: str):
    # `from kerasgl.testing import no_leaks` builds the fixture then, and only then needs pytest.
    if name == "no_leaks":
        fixture = globals()["no_leaks"] = _no_leaks_fixture()
        return fixture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
