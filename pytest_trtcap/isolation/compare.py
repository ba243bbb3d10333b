"""How a held collection is compared with its copy, named, and has one change taken out: by identity, so a
candidate converter or a table entry is the very object that was there. Shared by the converter registry
(``held_registry``) and the other held lists and tables (``held_state``).

A dict found equal to its copy is not walked again while its CPython version (PEP 509) stays: where a version can be
read (CPython 3.10 to 3.13, checked by probing a dict of our own), a clean check reads it instead of comparing every
entry; elsewhere every check compares in full.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import Counter
from typing import Any, NamedTuple

_ADDRESS = re.compile(r" (object )?at 0x[0-9a-fA-F]+")


def without_addresses(text: str) -> str:
    """``text`` with every memory address taken out: a leak line must read the same from run to run."""
    return _ADDRESS.sub("", text)


def name_of(target: Any) -> str:
    """``aten.mm.default``; a Python function by ``module.name`` (``operator.add``, ``torch.sym_min``), never by a
    ``repr`` holding a memory address that changes from run to run."""
    from trtcap_guards.tooling import target_name_of

    text = target_name_of(target)
    qualname = getattr(target, "__qualname__", None)
    if text.startswith("<") and isinstance(qualname, str):
        module = getattr(target, "__module__", None)
        return f"{module.lstrip('_')}.{qualname}" if isinstance(module, str) else qualname
    return without_addresses(text)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def multiset_missing(items: list, other: list) -> list[tuple[int, Any]]:
    """(index, item) of ``items`` with no identical partner left in ``other`` (counted, so duplicates show)."""
    left = Counter(id(x) for x in other)
    out = []
    for i, x in enumerate(items):
        if left[id(x)]:
            left[id(x)] -= 1
        else:
            out.append((i, x))
    return out


class ListRevert(NamedTuple):
    """What ``revert_list`` did: (index, item) taken out (its index in ``after``), put back (in ``before``)."""

    taken_out: list[tuple[int, Any]]
    put_back: list[tuple[int, Any]]


def revert_list(live: list, before: list, after: list) -> ListRevert:
    """Take the change ``before`` -> ``after`` out of ``live`` in place, by identity: each item it added that is
    still there is removed; each item it removed that nobody put back is re-inserted at its old index (clamped).
    What a later change did to the list stays as it is."""
    taken, back = [], []
    for i, item in multiset_missing(after, before):
        j = next((k for k, x in enumerate(live) if x is item), None)
        if j is not None:
            del live[j]
            taken.append((i, item))
    for i, item in multiset_missing(before, after):
        if not any(x is item for x in live):
            live.insert(min(i, len(live)), item)
            back.append((i, item))
    return ListRevert(taken, back)


# --- a held dict found unchanged without walking it ---------------------------------------------------------


@functools.cache
def _version_offset() -> int | None:
    """Where a dict keeps its version (PEP 509: CPython 3.10 to 3.13 move it at every change of that dict), or None
    where this interpreter keeps none that does: checked on a dict of our own, each kind of change must move it."""
    if sys.implementation.name != "cpython" or sys.version_info >= (3, 14):
        return None
    import ctypes

    used_at = object.__basicsize__  # ma_used, then ma_version_tag
    offset = used_at + ctypes.sizeof(ctypes.c_ssize_t)
    d: dict = {}
    seen = [ctypes.c_uint64.from_address(id(d) + offset).value]
    changes = (lambda: d.__setitem__("a", 1), lambda: d.__setitem__("a", 2), lambda: d.update(b=[]),
               lambda: d.setdefault("c", 3), lambda: d.pop("c"), lambda: d.__delitem__("b"), lambda: d.popitem(),
               lambda: d.update(x=1, y=2), lambda: d.clear())
    for change in changes:
        change()
        version = ctypes.c_uint64.from_address(id(d) + offset).value
        if version in seen or ctypes.c_ssize_t.from_address(id(d) + used_at).value != len(d):
            return None
        seen.append(version)
    return offset


def version_view(d: Any) -> Any:
    """A live view of ``d``'s version (a plain dict), or None where there is none to read."""
    offset = _version_offset()
    if offset is None or type(d) is not dict:
        return None
    import ctypes

    return ctypes.c_uint64.from_address(id(d) + offset)


class Seen(NamedTuple):
    """A held dict as last found equal to its copy: its version then, and the values that are not the copy's very
    objects, beside the copy's (a registry's lists of candidates, which can be edited in place)."""

    held: dict  # kept alive with the view of its version
    version_now: Any
    version: int
    values: tuple
    copies: tuple


def same_dict(d: dict, copy: dict, seen: list[Seen | None]) -> bool:
    """``d == copy``. Where ``d`` kept the version it had when last found so (``seen[0]``), only its values that are
    not the copy's objects are compared: a clean test pays no walk of a table, only of the lists in a registry."""
    last = seen[0]
    if last is not None:
        held, version_now, version, values, copies = last
        if held is d and version_now.value == version:
            return values == copies
    view = version_view(d)
    version = view.value if view is not None else 0  # read before comparing: a change meanwhile moves it past this
    if d != copy:
        return False
    if view is not None:
        pairs = [(value, copy[key]) for key, value in d.items() if value is not copy[key]]
        seen[0] = Seen(d, view, version, tuple(value for value, _ in pairs), tuple(held for _, held in pairs))
    return True
