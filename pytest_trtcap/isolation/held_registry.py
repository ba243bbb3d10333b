"""The converter registry as isolation holds it: its list of registry dicts, each dict, each target's candidates,
and its compilation settings and ``disallowed_targets``, compared by value and restored in place.

Split from ``held_state`` (which lists every held spec); the comparisons by identity it shares with the other held
collections are in ``compare``. Nothing here imports torch_tensorrt. The registry is found where the guards find it
(``trtcap_guards.live_registry``); a spec is active only while its module is loaded.
"""

from __future__ import annotations

import operator
import sys
from collections import Counter
from typing import Any, NamedTuple

from trtcap_guards.tooling import REGISTRY_MODULE, loaded_converter_registry

from .compare import Seen, name_of, plural, revert_list, same_dict, without_addresses

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


def _registry() -> Any:
    registry = loaded_converter_registry()
    if registry is None:  # the specs' ``available`` says so first; reaching here unloaded is a bug of ours
        raise LookupError(f"{REGISTRY_MODULE}.DYNAMO_CONVERTERS is not loaded")
    return registry


def registry_snapshot() -> RegistrySnapshot:
    reg = _registry()
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
    if _registry() is not snap.registry:
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


# --- the registry's compilation settings and disallowed targets ------------------------------------------


def _copy_collection(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return set(value)
    if isinstance(value, dict):
        return dict(value)
    return list(value) if isinstance(value, list) else value


class SettingsSnapshot(NamedTuple):
    """The settings object by identity and by value all the way down (its fields, collections copied, and the fields
    of every object it holds, such as ``device``: an edit in place of what the validators and the audit read is a
    change), and ``disallowed_targets`` by identity and value."""

    settings: Any
    values: dict[str, Any] | None  # None: the settings hold no fields (None before the first compile)
    disallowed: Any
    disallowed_contents: Any
    nested: tuple[tuple[str, Any, dict[str, Any]], ...]  # (path, object, its fields) of each object held below


def _fields_of(settings: Any) -> dict[str, Any] | None:
    return getattr(settings, "__dict__", None) if settings is not None else None


def _held_objects(path: str, value: Any, depth: int = 0) -> list[tuple[str, Any, dict[str, Any]]]:
    """Every plain object reachable from ``value`` through fields, lists, tuples and dict values, with a copy of its
    fields: classes, functions and modules are held by identity only."""
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [found for item in value for found in _held_objects(path, item, depth + 1)]
    if isinstance(value, dict):
        return [found for k, v in value.items() for found in _held_objects(f"{path}[{k!r}]", v, depth + 1)]
    fields = getattr(value, "__dict__", None)
    if not isinstance(fields, dict) or isinstance(value, type) or callable(value) or hasattr(value, "__spec__"):
        return []
    out = [(path, value, {k: _copy_collection(v) for k, v in fields.items()})]
    return out + [found for k, v in fields.items() for found in _held_objects(f"{path}.{k}", v, depth + 1)]


def settings_snapshot() -> SettingsSnapshot:
    reg = _registry()
    fields = _fields_of(reg.compilation_settings)
    values = None if fields is None else {k: _copy_collection(v) for k, v in fields.items()}
    nested = () if fields is None else tuple(
        found for k, v in fields.items() for found in _held_objects(f"compilation_settings.{k}", v))
    return SettingsSnapshot(reg.compilation_settings, values, reg.disallowed_targets,
                            _copy_collection(reg.disallowed_targets), nested)


def settings_changed(snap: SettingsSnapshot) -> bool:
    """Identity first, then C-level comparisons of the held object's fields and of each object's below it."""
    reg = sys.modules[REGISTRY_MODULE].DYNAMO_CONVERTERS
    return (reg.compilation_settings is not snap.settings or reg.disallowed_targets != snap.disallowed_contents
            or (snap.values is not None and _fields_of(snap.settings) != snap.values)
            or any(_fields_of(obj) != fields for _, obj, fields in snap.nested))


def _restore_collection(held: Any, contents: Any) -> bool:
    """Put ``contents`` back into the collection ``held`` in place; False when ``held`` is no such collection."""
    if (isinstance(held, set) and isinstance(contents, (set, frozenset))) or (
            isinstance(held, dict) and isinstance(contents, dict)):
        held.clear()
        held.update(contents)
    elif isinstance(held, list) and isinstance(contents, list):
        held[:] = contents
    else:
        return False
    return True


def _restore_fields(settings: Any, values: dict[str, Any]) -> None:
    """Each field that differs is put back, a collection in place (``disallowed_targets`` may be that very set)."""
    fields = _fields_of(settings)
    if fields is None:  # not a dataclass any more: nothing to put back field by field
        return
    for key in [k for k in fields if k not in values]:
        del fields[key]
    for key, value in values.items():
        now = fields.get(key)
        if (key not in fields or now != value) and not _restore_collection(now, value):
            fields[key] = _copy_collection(value)


def settings_restore(snap: SettingsSnapshot) -> None:
    reg = _registry()
    if snap.values is not None and _fields_of(snap.settings) != snap.values:
        _restore_fields(snap.settings, snap.values)
    for _, obj, fields in snap.nested:
        if _fields_of(obj) != fields:
            _restore_fields(obj, fields)
    _restore_collection(snap.disallowed, snap.disallowed_contents)
    reg.compilation_settings, reg.disallowed_targets = snap.settings, snap.disallowed


def _shown(value: Any) -> str:
    from ..hook_results import shown

    return without_addresses(shown(value, 80))


def _field_changes(snap: SettingsSnapshot) -> list[str]:
    out = _object_changes("compilation_settings", snap.settings, snap.values, snap.disallowed)
    for path, obj, fields in snap.nested:
        out += _object_changes(path, obj, fields, snap.disallowed)
    return sorted(out)


def _object_changes(path: str, obj: Any, before: dict[str, Any] | None, disallowed: Any) -> list[str]:
    now = _fields_of(obj)
    if before is None or now is None or now == before:
        return []
    out = [f"{path}.{k} added" for k in now.keys() - before.keys()]
    out += [f"{path}.{k} removed" for k in before.keys() - now.keys()]
    out += [f"{path}.{k} changed: {_shown(now[k])}, was {_shown(before[k])}"
            for k in now.keys() & before.keys()
            if now[k] != before[k] and now[k] is not disallowed]  # that set is named as disallowed_targets
    return out


def settings_describe(snap: SettingsSnapshot) -> list[str]:
    """A new settings object is restored silently (every compile sets one, and its disallowed targets from it); an
    edit of the held object's fields is named, and so is ``disallowed_targets`` edited behind the settings' back."""
    reg = _registry()
    out = _field_changes(snap)
    if reg.compilation_settings is not snap.settings:
        return out
    now, before = set(reg.disallowed_targets or ()), set(snap.disallowed_contents or ())
    out += sorted([f"disallowed_targets: {name_of(t)} added" for t in now - before]
                  + [f"disallowed_targets: {name_of(t)} removed" for t in before - now])
    return out
