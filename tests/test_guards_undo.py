"""Undo handles undone in any order put back what was in effect before the changes that are still live."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from trtcap_guards.undo import LiveHandles, UndoHandle


class _Cell:
    """A value changed through undo handles, as the declarations and the builder switch are."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.live = LiveHandles()

    def change(self, value: Any) -> UndoHandle:
        cell = self

        class _Handle(UndoHandle):
            def _put_back(self, before: Any) -> None:
                cell.value = before

        handle = _Handle(self.live, self.value)
        self.value = value
        return handle


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_any_order_of_undoing_leaves_the_value_of_the_changes_still_live(order: tuple) -> None:
    cell = _Cell("base")
    handles = [cell.change(name) for name in ("a", "b", "c")]
    undone = set()
    for index in order:
        handles[index].undo()
        undone.add(index)
        live = [name for i, name in enumerate("abc") if i not in undone]
        assert cell.value == (live[-1] if live else "base"), (order, undone)
    assert cell.live.handles == ()


def test_undo_twice_and_the_context_manager_undo_once() -> None:
    cell = _Cell(0)
    with cell.change(1) as handle:
        inner = cell.change(2)
        assert cell.value == 2
    assert cell.value == 2  # the newer change is still live
    handle.undo()
    inner.undo()
    inner.undo()
    assert cell.value == 0
