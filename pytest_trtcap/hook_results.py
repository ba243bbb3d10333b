"""Check what a project's implementations of our hooks return, naming the implementation that returned it.

A result of the wrong shape is a usage error (exit 4) that names the hook, the conftest or plugin file that
implements it and the value, raised before the first test rather than as a traceback in every test. Each
implementation is called on its own, in pluggy's order, so a bad value can be traced to its file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .escaping import one_line

ISOLATED_STATE = "pytest_trtcap_isolated_state"
TARGETS = "pytest_trtcap_target_capabilities"


class HookResult:
    """One implementation's return value and where it lives (plain classes: this module loads in every session)."""

    __slots__ = ("value", "where")

    def __init__(self, value: Any, where: str) -> None:
        self.value = value
        self.where = where  # the implementing conftest's or plugin's file, else its registered name


class StateEntry:
    """A checked ``(label, snapshot, restore)`` entry of ``pytest_trtcap_isolated_state``."""

    __slots__ = ("label", "snapshot", "restore", "where")

    def __init__(self, label: str, snapshot: Callable[[], Any], restore: Callable[[Any], None],
                 where: str = "") -> None:
        self.label, self.snapshot, self.restore = label, snapshot, restore
        self.where = where  # the conftest or plugin file that returned it, for errors about it later


def shown(value: Any, limit: int = 300) -> str:
    """``repr(value)`` on one line, bounded and free of control characters, for an error message; never raises (a
    project's ``__repr__`` may)."""
    try:
        text = repr(value)
    except Exception as exc:  # any failure of foreign code is reported, not raised
        text = f"<{type(value).__name__} object; repr() raised {type(exc).__name__}>"
    text = one_line(text)  # on one line
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _where(impl: Any) -> str:
    """The module's file, else the name it was registered under; pluggy names an object registered without one by a
    number, so that one is named by the file that defines its hook."""
    plugin = impl.plugin
    if getattr(plugin, "__file__", None):
        return one_line(str(plugin.__file__))
    code = getattr(impl.function, "__code__", None)
    if impl.plugin_name == str(id(plugin)) and code is not None:
        return one_line(f"{type(plugin).__name__} object from {code.co_filename}")
    return one_line(str(impl.plugin_name))


def _each(caller: Any, **kwargs: Any) -> Iterator[HookResult]:
    """Call every implementation as pluggy would (last registered first; wrappers have nothing to return). One that
    raises is a usage error naming the hook, its file, the exception and the line that raised it: a project's bug,
    reported once before the first test, not as pytest's internal error through this plugin."""
    for impl in reversed(caller.get_hookimpls()):
        if getattr(impl, "hookwrapper", False) or getattr(impl, "wrapper", False):
            continue
        try:
            value = impl.function(*[kwargs[name] for name in impl.argnames])
        except Exception as exc:  # the project's code: any failure is named, not raised through us
            raise pytest.UsageError(f"trtcap: hook {caller.name} in {_where(impl)} raised {shown(exc)}"
                                    f"{_raised_at(exc)}") from exc
        yield HookResult(value, _where(impl))


def _raised_at(exc: BaseException) -> str:
    """`` at FILE:LINE`` of the innermost frame that raised ``exc`` (the usage error shows no traceback)."""
    from .needs_gpu import innermost  # the traceback walk's one home; loaded only for this error

    tb = innermost(exc.__traceback__)
    if tb is None:
        return ""
    return one_line(f" at {tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")


def entry_failure(where: str, label: str, step: str, exc: Exception) -> str:
    """The error for a ``pytest_trtcap_isolated_state`` entry whose ``snapshot`` or ``restore`` raised, or whose
    snapshots refuse ``!=`` (``step`` "compare"), naming the hook, the file that returned the entry and its label."""
    if step == "compare":
        what = (f"its snapshots cannot be compared with != ({shown(exc)}); return a snapshot that compares by value "
                "(convert arrays or tensors)")
    else:
        what = f"{step}() raised {shown(exc)}{_raised_at(exc)}"
    return (f"trtcap: hook {ISOLATED_STATE} in {one_line(where)}: entry {shown(label)}: {what}; "
            "it is no longer held in this session")


def first_result(caller: Any, **kwargs: Any) -> HookResult | None:
    """A ``firstresult`` hook's answer with where it came from; None when every implementation passed."""
    return next((found for found in _each(caller, **kwargs) if found.value is not None), None)


def _entry(entry: Any, where: str = "") -> StateEntry | None:
    if not isinstance(entry, tuple) or len(entry) != 3:
        return None
    label, snapshot, restore = entry
    if not isinstance(label, str) or not callable(snapshot) or not callable(restore):
        return None
    return StateEntry(label, snapshot, restore, where)


def _state_entries(found: HookResult) -> list[StateEntry]:
    value = found.value
    problem = ""
    if isinstance(value, tuple) and _entry(value) is not None:
        problem = "a single entry; return a list of them"
    elif isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
        problem = "not a list"
    else:
        bad = next((e for e in value if _entry(e) is None), None)
        if bad is None:
            return [_entry(e, found.where) for e in value]  # type: ignore[misc]
        value, problem = bad, "an entry of another shape"
    raise pytest.UsageError(
        f"trtcap: hook {ISOLATED_STATE} in {found.where}: expected a list of (label: str, snapshot(), "
        f"restore(value)) entries, got {problem}: {shown(value)}"
    )


def isolated_state_entries(config: pytest.Config) -> list[StateEntry]:
    """Every entry the project's ``pytest_trtcap_isolated_state`` implementations add; UsageError on a bad one."""
    entries: list[StateEntry] = []
    for found in _each(getattr(config.hook, ISOLATED_STATE), config=config):
        if found.value is not None:
            entries.extend(_state_entries(found))
    return entries


def late_target_hook(config: pytest.Config, known: tuple) -> str | None:
    """The usage error for a targets hook pytest registered after the settings were resolved (in a conftest it found
    while collecting), whose answer would otherwise be ignored without a word; None if there is none. ``known``: the
    plugins that implemented the hook then."""
    late = [impl for impl in getattr(config.hook, TARGETS).get_hookimpls() if impl.plugin not in known]
    if not late:
        return None
    return (f"trtcap: hook {TARGETS} in {_where(late[0])}: registered after the session's targets were settled "
            "(pytest configures before it collects), so its answer would be ignored; implement it in a plugin or in "
            "a conftest.py pytest loads before configuring: one in a folder given on the command line (or in "
            "testpaths), or in a folder above one")
