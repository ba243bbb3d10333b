"""A call just before the guards' process state first changes: declarations, neutralizations, the builder switch.

The pytest plugin stays dormant in sessions that never use the guards or Torch-TensorRT (it loads in every pytest
run of an environment); it listens here so that it can start holding the guards' state before the first change
is made, wherever that happens. Listeners are called once and dropped.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from typing import Any, Callable, List

_listeners: List[Callable[[], Any]] = []
_changed = False


def on_first_change(callback: Callable[[], Any]) -> Callable[[], None]:
    """Call ``callback()`` before the next change of the guards' state; returns a function that cancels it."""
    _listeners.append(callback)

    def cancel() -> None:
        if callback in _listeners:
            _listeners.remove(callback)

    return cancel


def changed() -> bool:
    """Whether anything has changed the guards' state since this process imported them (it may since have been
    put back): until then, asking what the state is needs none of the modules that hold it."""
    return _changed


def changing() -> None:
    """Called by every function that changes the guards' state, before it does."""
    global _changed
    _changed = True
    if _listeners:
        pending = list(_listeners)
        _listeners.clear()
        for callback in pending:
            callback()
