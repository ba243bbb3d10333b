"""The converter registry as isolation holds it (its list of registry dicts, each dict, each target's candidates;
its settings are ``held_state``'s), and how any held list or dict is compared with its copy, named,
and has one change taken out: by identity, so a candidate converter or a table entry is the very object that was
there. Nothing here imports torch_tensorrt; a spec is active only while its module is loaded.

A dict found equal to its copy is not walked again while its CPython version (PEP 509) stays: where a version can be
read (CPython 3.10 to 3.13, checked by probing a dict of our own), a clean check reads it instead of comparing every
entry; elsewhere every check compares in full.
"""

from __future__ import annotations

import functools
import operator
import re
import sys
from collections import Counter
from typing import Any, NamedTuple

from trtcap_guards.tooling import REGISTRY_MODULE, loaded_converter_registry

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


# --- the converter registry ----------------------------------------------------------------------------------

_ABSENT = object()  # a target not in a registry dict

#: A leak line lists this many targets of one registry; more are counted (``-v`` lists all).
FEW = 3


# --- converter registry: the list of registry dicts, each dict, each target's list of candidates ------------


class AllSeen(NamedTuple):
    """Every registry dict as last found equal to its copy (``same_dict``), put together: one read of their
    versions and one comparison of all their lists of candidates answer a clean check."""

    views: tuple
    versions: tuple
    values: tuple
    copies: tuple


class RegistrySnapshot(NamedTuple):
    registry: Any  # ``DYNAMO_CONVERTERS`` itself: a test may rebind the module's name
    registries: list  # the registry's own list object
    entries: list  # its elements (dicts), by identity
    names: list
    conventions: list
    dicts: tuple[tuple[dict, dict, dict], ...]  # (dict, its values by identity, its lists' contents)
    seen: tuple[list[Seen | None], ...]  # per dict: where it was last found equal (``same_dict``)
    all_seen: list[AllSeen | None]  # every dict's ``seen``, put together once all are found equal


_VERSION = operator.attrgetter("value")


def registry() -> Any:
    found = loaded_converter_registry()
    if found is None:  # the specs' ``available`` says so first; reaching here unloaded is a bug of ours
        raise LookupError(f"{REGISTRY_MODULE}.DYNAMO_CONVERTERS is not loaded")
    return found


def registry_snapshot() -> RegistrySnapshot:
    reg = registry()
    dicts = tuple((d, dict(d), {k: list(v) if isinstance(v, list) else v for k, v in d.items()})
                  for d in reg.registries if isinstance(d, dict))
    return RegistrySnapshot(reg, reg.registries, list(reg.registries), list(reg.registry_names),
                            list(reg.registry_calling_conventions), dicts, tuple([None] for _ in dicts), [None])


def registry_changed(snap: RegistrySnapshot) -> bool:
    reg = sys.modules[REGISTRY_MODULE].DYNAMO_CONVERTERS  # (a module gone: the ledger asks which specs are live)
    if reg is not snap.registry:
        return True
    now = reg.registries
    if now is not snap.registries or len(now) != len(snap.entries) or not all(map(operator.is_, now, snap.entries)):
        return True
    if reg.registry_names != snap.names or reg.registry_calling_conventions != snap.conventions:
        return True
    every = snap.all_seen[0]
    if every is not None and tuple(map(_VERSION, every.views)) == every.versions:
        return every.values != every.copies
    for (d, _, contents), seen in zip(snap.dicts, snap.seen):
        if not same_dict(d, contents, seen):
            return True
    found = [seen[0] for seen in snap.seen if seen[0] is not None]
    if len(found) == len(snap.seen):  # each dict's version can be read
        snap.all_seen[0] = AllSeen(tuple(f.version_now for f in found), tuple(f.version for f in found),
                                   sum((f.values for f in found), ()), sum((f.copies for f in found), ()))
    return False


def registry_restore(snap: RegistrySnapshot) -> None:
    reg = snap.registry
    vars(sys.modules[REGISTRY_MODULE])["DYNAMO_CONVERTERS"] = reg  # a test may have pointed it elsewhere
    snap.registries[:] = snap.entries
    reg.registries = snap.registries
    reg.registry_names[:] = snap.names
    reg.registry_calling_conventions[:] = snap.conventions
    for d, objects, contents in snap.dicts:
        d.clear()
        for key, obj in objects.items():
            if isinstance(obj, list):
                obj[:] = contents[key]
            d[key] = obj


def _guard_of(candidate: Any) -> Any:
    """The stock candidate a guarded one wraps (``trtcap_guards.install``), else None."""
    return getattr(getattr(candidate, "capability_validator", None), "_trtcap_original", None)


def _list_change(before: list, after: list) -> str:
    new = [c for c in after if not any(c is b for b in before)]
    gone = [b for b in before if not any(b is c for c in after)]
    added, removed = len(new), len(gone)
    if added and added == removed:
        if all(any(_guard_of(c) is b for b in gone) for c in new):
            return "guard added"
        if all(any(_guard_of(b) is c for c in new) for b in gone):
            return "guard removed"
        return f"{plural(added, 'converter')} replaced"
    parts = ([f"{plural(added, 'converter')} added"] if added else []) + (
        [f"{plural(removed, 'converter')} removed"] if removed else [])
    return ", ".join(parts) or "converters reordered"


class TargetChange(NamedTuple):
    target: str
    what: str


def _dict_changes(d: dict, contents: dict) -> list[TargetChange]:
    out = []
    for key in d.keys() - contents.keys():
        n = len(d[key]) if isinstance(d[key], list) else 1
        out.append(TargetChange(name_of(key), f"target added ({plural(n, 'converter')})"))
    out += [TargetChange(name_of(key), "target removed") for key in contents.keys() - d.keys()]
    for key in contents.keys() & d.keys():
        before, after = contents[key], d[key]
        if before != after:
            both_lists = isinstance(after, list) and isinstance(before, list)
            out.append(TargetChange(name_of(key), _list_change(before, after) if both_lists else "converter replaced"))
    return sorted(out)


class DictSide(NamedTuple):
    """One registry dict as a snapshot saw it: its values by identity, and its lists' contents."""

    objects: dict
    contents: dict


def _same(a: Any, b: Any) -> bool:
    """The same value, a list's candidates compared by identity (a candidate's ``==`` compares its fields)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(x is y for x, y in zip(a, b))
    return a is b


def _put_back_target(d: dict, key: Any, was: DictSide) -> str:
    """A target the fixture removed: back, unless somebody registered it again since."""
    if key in d:
        return ""
    d[key] = was.objects[key]
    if isinstance(d[key], list):
        d[key][:] = was.contents[key]
    return "target removed"


def _revert_target(d: dict, key: Any, was: DictSide, made: DictSide) -> str:
    """Take one target's change out of ``d``; what was taken out, worded like ``_dict_changes`` ("" for nothing:
    what it did was undone or changed since)."""
    if key not in made.objects:
        return _put_back_target(d, key, was)
    live, added = d.get(key, _ABSENT), made.contents[key]
    if isinstance(live, list) and isinstance(added, list):
        old = was.contents.get(key, [])
        done = revert_list(live, old if isinstance(old, list) else [], added)
        if key not in was.objects and not live:
            del d[key]
            return f"target added ({plural(len(done.taken_out), 'converter')})"
        if not (done.taken_out or done.put_back):
            return ""
        return _list_change([x for _, x in done.put_back], [x for _, x in done.taken_out])
    if live is not made.objects[key]:
        return ""
    if key in was.objects:
        d[key] = was.objects[key]
        return "converter replaced"
    del d[key]
    return "target added (1 converter)"


def registry_revert(before: RegistrySnapshot, after: RegistrySnapshot, list_all: bool = False) -> list[str]:
    """Take out of each registry dict what changed from ``before`` to ``after`` (a fixture's setup) and is still
    as it left it: a target it added, one it removed, the candidates it added to or removed from a target's list.
    The registry's list of dicts, its names and conventions are left alone (no fixture was seen changing them)."""
    out: list[str] = []
    for d, objects, contents in after.dicts:
        held = next((DictSide(o, c) for other, o, c in before.dicts if other is d), None)
        if held is None:
            continue
        made = DictSide(objects, contents)
        changes = []
        for key in made.contents.keys() | held.contents.keys():
            if key in made.objects and key in held.objects and made.objects[key] is held.objects[key] and _same(
                    made.contents[key], held.contents[key]):
                continue
            what = _revert_target(d, key, held, made)
            if what:
                changes.append(TargetChange(name_of(key), what))
        out += _registry_lines(_registry_name(after, d), sorted(changes), list_all)
    return sorted(out)


def _registry_lines(registry: str, changes: list[TargetChange], list_all: bool) -> list[str]:
    """One line per target, or, past ``FEW`` targets (without ``-v``), one line for the registry: how many targets
    changed and how, and the first few by name."""
    if list_all or len(changes) <= FEW:
        return [f"{c.target}: {c.what}" for c in changes]
    kinds = ", ".join(f"{what} x{n}" for what, n in sorted(Counter(c.what for c in changes).items()))
    first = ", ".join(c.target for c in changes[:FEW])
    return [f"{registry}: {len(changes)} targets changed ({kinds}): {first} and {len(changes) - FEW} more "
            "(-v lists all)"]


def _registry_name(snap: RegistrySnapshot, d: dict) -> str:
    names = [name for element, name in zip(snap.entries, snap.names) if element is d]
    return str(names[0]) if names else "DYNAMO_CONVERTERS registry"


def registry_describe(snap: RegistrySnapshot, list_all: bool = False) -> list[str]:
    if registry() is not snap.registry:
        return [f"{REGISTRY_MODULE.rpartition('.')[2]}.DYNAMO_CONVERTERS rebound"]
    reg = snap.registry
    out: list[str] = []
    if reg.registries is not snap.registries:
        out.append("DYNAMO_CONVERTERS.registries rebound")
    now = list(reg.registries)
    out += [f"DYNAMO_CONVERTERS.registries: registry added at index {i}"
            for i, r in enumerate(now) if not any(r is h for h in snap.entries)]
    out += [f"DYNAMO_CONVERTERS.registries: registry removed from index {i}"
            for i, h in enumerate(snap.entries) if not any(r is h for r in now)]
    if reg.registry_names != snap.names or reg.registry_calling_conventions != snap.conventions:
        out.append("DYNAMO_CONVERTERS registry names or calling conventions changed")
    for d, _, contents in snap.dicts:
        out += _registry_lines(_registry_name(snap, d), _dict_changes(d, contents), list_all)
    return sorted(out) or ["DYNAMO_CONVERTERS.registries reordered"]
