"""The converter registry as isolation holds it: its list of registry dicts, each dict, each target's candidates,
and its compilation settings and ``disallowed_targets``, compared by value and restored in place.

Split from ``held_state`` (which lists every held spec); nothing here imports torch_tensorrt. The registry is
found where the guards find it (``trtcap_guards.live_registry``); a spec is active only while its module is loaded.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Tuple

from trtcap_guards.live_registry import REGISTRY_MODULE, loaded_converter_registry


def name_of(target: Any) -> str:
    from trtcap_guards.rules import target_name_of

    return target_name_of(target)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# --- converter registry: the list of registry dicts, each dict, each target's list of candidates ------------


class RegistrySnapshot(NamedTuple):
    registries: list  # the registry's own list object
    entries: list  # its elements (dicts), by identity
    names: list
    conventions: list
    dicts: Tuple[Tuple[dict, dict, dict], ...]  # (dict, its values by identity, its lists' contents)


def _registry() -> Any:
    registry = loaded_converter_registry()
    if registry is None:  # the specs' ``available`` says so first; reaching here unloaded is a bug of ours
        raise LookupError(f"{REGISTRY_MODULE}.DYNAMO_CONVERTERS is not loaded")
    return registry


def registry_snapshot() -> RegistrySnapshot:
    reg = _registry()
    dicts = tuple((d, dict(d), {k: list(v) if isinstance(v, list) else v for k, v in d.items()})
                  for d in reg.registries if isinstance(d, dict))
    return RegistrySnapshot(reg.registries, list(reg.registries), list(reg.registry_names),
                            list(reg.registry_calling_conventions), dicts)


def registry_changed(snap: RegistrySnapshot) -> bool:
    reg = _registry()
    now = reg.registries
    if now is not snap.registries or len(now) != len(snap.entries):
        return True
    for element, held in zip(now, snap.entries):
        if element is not held:
            return True
    for d, _, contents in snap.dicts:
        if d != contents:
            return True
    return reg.registry_names != snap.names or reg.registry_calling_conventions != snap.conventions


def registry_restore(snap: RegistrySnapshot) -> None:
    reg = _registry()
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


def _list_change(before: list, after: list) -> str:
    added = sum(1 for c in after if not any(c is b for b in before))
    removed = sum(1 for b in before if not any(b is c for c in after))
    if added and added == removed:
        return f"{plural(added, 'converter')} replaced"
    parts = ([f"{plural(added, 'converter')} added"] if added else []) + (
        [f"{plural(removed, 'converter')} removed"] if removed else [])
    return ", ".join(parts) or "converters reordered"


def _dict_changes(d: dict, contents: dict) -> List[str]:
    out = []
    for key in d.keys() - contents.keys():
        n = len(d[key]) if isinstance(d[key], list) else 1
        out.append(f"{name_of(key)}: target added ({plural(n, 'converter')})")
    out += [f"{name_of(key)}: target removed" for key in contents.keys() - d.keys()]
    for key in contents.keys() & d.keys():
        before, after = contents[key], d[key]
        if before != after:
            both_lists = isinstance(after, list) and isinstance(before, list)
            out.append(f"{name_of(key)}: {_list_change(before, after) if both_lists else 'converter replaced'}")
    return out


def registry_describe(snap: RegistrySnapshot) -> List[str]:
    reg = _registry()
    out: List[str] = []
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
        out += _dict_changes(d, contents)
    return sorted(out) or ["DYNAMO_CONVERTERS.registries reordered"]


# --- the registry's compilation settings and disallowed targets ------------------------------------------


def _copy_collection(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return set(value)
    return list(value) if isinstance(value, list) else value


def settings_snapshot() -> Tuple[Any, Any, Any]:
    reg = _registry()
    return (reg.compilation_settings, reg.disallowed_targets, _copy_collection(reg.disallowed_targets))


def settings_changed(snap: Tuple[Any, Any, Any]) -> bool:
    reg = _registry()
    return reg.compilation_settings is not snap[0] or reg.disallowed_targets != snap[2]


def settings_restore(snap: Tuple[Any, Any, Any]) -> None:
    reg = _registry()
    settings, held, contents = snap
    if isinstance(held, set):
        held.clear()
        held.update(contents)
    elif isinstance(held, list):
        held[:] = contents
    reg.compilation_settings, reg.disallowed_targets = settings, held


def settings_describe(snap: Tuple[Any, Any, Any]) -> List[str]:
    """Silent when the settings object changed (every compile sets both); named when edited behind its back."""
    reg = _registry()
    if reg.compilation_settings is not snap[0]:
        return []
    now, before = set(reg.disallowed_targets or ()), set(snap[2] or ())
    out = [f"disallowed_targets: {name_of(t)} added" for t in now - before]
    out += [f"disallowed_targets: {name_of(t)} removed" for t in before - now]
    return sorted(out)
