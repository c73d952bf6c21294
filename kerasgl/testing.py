"""Test helpers for kerasgl users and for kerasgl's own suite.

`no_leaks` is a pytest fixture: the test fails if it leaves more tensors (or tensor bytes) alive
than it found, and the failure prints the leak report (with creation sites: leak tracking is on
for the test). Use it from a conftest.py:

    from kerasgl.testing import no_leaks  # noqa: F401  (pytest finds the fixture by name)
    pytestmark = pytest.mark.usefixtures("no_leaks")
"""
from __future__ import annotations

import pytest

from .tensors import ownership


def live_tensor_ids() -> set:
    return {id(t) for t in ownership.live_tensors()}


@pytest.fixture
def no_leaks():
    before = live_tensor_ids()
    with ownership.track_leaks(True):
        yield
        leaked = [t for t in ownership.live_tensors() if id(t) not in before]
    if leaked:
        # Free them so one leaking test does not fail every test after it.
        report = ownership.leak_report()
        for tensor in leaked:
            tensor.dispose()
        pytest.fail(f"The test left {len(leaked)} tensor(s) alive.\n{report}", pytrace=False)
