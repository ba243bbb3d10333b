"""Undo handles that can be undone in any order: the declarations and the builder switch return them.

A handle puts back what was in effect before its change. Handles are often undone out of order (a fixture's
teardown after a test's own ``with`` block, two fixtures of different scopes), and a handle that simply put back
the value it saw would then bring back a change that was already undone. So each kind of change keeps its live
handles, oldest first: undoing the newest puts its "before" back; undoing an older one changes nothing now and
hands its "before" to the handle above it, which puts that back in its turn.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run (``process_state`` holds the live
handles), has no assert to rewrite.
"""

from __future__ import annotations

from typing import Any


class LiveHandles:
    """The live undo handles of one kind of change, oldest first. A tuple replaced at every change, never changed in
    place: a snapshot of the guards' state takes it as it is, at the cost of one attribute read."""

    __slots__ = ("handles",)

    def __init__(self) -> None:
        self.handles: tuple[UndoHandle, ...] = ()


class UndoHandle:
    """One change's undo handle; also a context manager. Subclasses say how to put a value back."""

    def __init__(self, live: LiveHandles, before: Any) -> None:
        self._live = live
        self._before = before
        live.handles += (self,)

    def _put_back(self, before: Any) -> None:
        raise NotImplementedError

    def undo(self) -> None:
        """Undo the change (once; later calls do nothing)."""
        handles = self._live.handles
        at = next((i for i, handle in enumerate(handles) if handle is self), None)
        if at is None:
            return
        rest = handles[:at] + handles[at + 1:]
        self._live.handles = rest
        if at < len(rest):  # a later change is in effect: it puts back our "before" when it is undone
            rest[at]._before = self._before
        else:
            self._put_back(self._before)

    def __enter__(self) -> UndoHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()
