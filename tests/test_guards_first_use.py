"""``trtcap_guards.process_state``: a listener is called once, before the guards' state first changes, by every
function that changes it, and never by one that only reads it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import trtcap_guards as guards
from trtcap_guards import process_state


@pytest.fixture
def calls() -> Iterator[list[Any]]:
    """The state each call of a listener saw (so a test can tell it ran before the change)."""
    seen: list[Any] = []
    cancel = process_state.on_first_change(lambda: seen.append(guards.state_snapshot(fired=False)))
    yield seen
    cancel()


CHANGES: list[Callable[[], Any]] = [
    lambda: guards.declare_targets("8.9", origin="first-use test").undo(),
    lambda: guards.declare_backend("standard", origin="first-use test").undo(),
    lambda: guards.enable_builder_targets(False, origin="first-use test").undo(),
]


@pytest.mark.parametrize("change", CHANGES, ids=["declare_targets", "declare_backend", "enable_builder_targets"])
def test_each_change_calls_the_listener_once_before_it_changes(calls: list[Any], change: Callable[[], Any]) -> None:
    before = guards.state_snapshot(fired=False)
    change()
    change()
    assert calls == [before]


def test_entering_a_neutralization_calls_it_before(calls: list[Any]) -> None:
    before = guards.state_snapshot(fired=False)
    with guards.neutralize("aten.mm.default"):
        assert calls == [before]
    assert calls == [before]


def test_reading_never_calls_it(calls: list[Any]) -> None:
    guards.capability_decision(probe_host=False)
    guards.neutralized()
    guards.builder_targets_enabled()
    guards.state_snapshot()
    assert calls == []


def test_a_cancelled_listener_is_not_called() -> None:
    seen: list[str] = []
    cancel = process_state.on_first_change(lambda: seen.append("called"))
    cancel()
    cancel()  # twice is harmless
    guards.declare_targets("8.9", origin="first-use test").undo()
    assert seen == []


def test_restoring_a_snapshot_is_a_change_too(calls: list[Any]) -> None:
    before = guards.state_snapshot(fired=False)
    guards.restore_state(before)
    assert calls == [before]


CHANGED_PROBE = """
import trtcap_guards as guards
from trtcap_guards import process_state
print(process_state.changed())
guards.capability_decision(probe_host=False)
guards.state_snapshot()
print(process_state.changed())
guards.declare_targets("8.9", origin="probe").undo()
print(process_state.changed())
"""


def test_changed_says_whether_anything_changed_the_state_since_import() -> None:
    """Reading leaves it False; a change makes it True, and undoing the change does not take that back."""
    out = subprocess.run([sys.executable, "-c", CHANGED_PROBE], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True"]
