"""What isolation holds of Torch-TensorRT's process-wide state, and how each piece is compared and put back.

Every spec compares by value against an immutable copy (one C-level equality on a clean test) and restores in
place: Torch-TensorRT's modules and the suite's tests imported these objects by name, so rebinding them would
leave every other holder on the changed object. Nothing here imports torch_tensorrt: a spec is active only once
its module is in ``sys.modules``. The project's inventory (``tests/isolation_inventory.py``) says which spec holds
what, and why the rest is not.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

from trtcap_guards import restore_state, state_snapshot
from trtcap_guards.tooling import INTERPRETER_MODULE, POPULATE, describe_changes, is_builder_wrapper

from . import held_registry as reg
from .held_registry import (
    REGISTRY_MODULE,
    multiset_missing,
    name_of,
    registry,
    revert_list,
    same_dict,
    without_addresses,
)
from .ledger import StateSpec

ATOMIC_MODULE = "torch_tensorrt.dynamo.partitioning._atomic_subgraphs"
PASSES_MODULE = "torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass"
DECOMPOSITIONS_MODULE = "torch_tensorrt.dynamo.lowering._decomposition_groups"
FOLD_EXCLUSIONS_MODULE = "torch_tensorrt.dynamo.lowering.constant_fold_exclusions._core"


def _loaded(module: str) -> Callable[[], bool]:
    return lambda: module in sys.modules


# --- ATOMIC_SUBGRAPHS ------------------------------------------------------------------------------------


def _atomic() -> Any:
    return sys.modules[ATOMIC_MODULE]


def _atomic_snapshot() -> tuple[list, list]:
    lst = _atomic().ATOMIC_SUBGRAPHS
    return (lst, list(lst))


def _atomic_changed(snap: tuple[list, list]) -> bool:
    lst = sys.modules[ATOMIC_MODULE].ATOMIC_SUBGRAPHS  # (``_atomic()``, without a call: asked at every check)
    return lst is not snap[0] or lst != snap[1]


def _atomic_restore(snap: tuple[list, list]) -> None:
    module = _atomic()
    snap[0][:] = snap[1]
    module.ATOMIC_SUBGRAPHS = snap[0]
    _clear_traced(module)


def _clear_traced(module: Any) -> None:
    """The traced patterns are cached per entry: a changed list must not find a removed one's graph."""
    clear = getattr(getattr(module, "trace_atomic_graph", None), "cache_clear", None)
    if callable(clear):
        clear()


def format_atomic_entry(entry: Any) -> str:
    """``(ReLUConv, (), True)``: class name, init args, is_core_aten."""
    try:
        cls, init_args, core = entry
        args = ", ".join(name_of(a) if callable(a) else repr(a) for a in init_args)
        args = f"({args},)" if len(init_args) == 1 else f"({args})"
        return f"({getattr(cls, '__name__', cls)}, {args}, {core})"
    except (TypeError, ValueError):
        return repr(entry)


def _atomic_describe(snap: tuple[list, list]) -> list[str]:
    now, before = list(_atomic().ATOMIC_SUBGRAPHS), snap[1]
    out = [f"added ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for _, e in _missing_by_value(now, before)]
    out += [f"removed ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for _, e in _missing_by_value(before, now)]
    return out or ["ATOMIC_SUBGRAPHS reordered"]


def _missing_by_value(items: list, other: list) -> list[tuple[int, Any]]:
    """(index, item) of ``items`` with no equal partner left in ``other``, counted: a duplicate is an addition."""
    left = list(other)
    out = []
    for i, item in enumerate(items):
        j = next((k for k, x in enumerate(left) if x is item or x == item), None)
        if j is None:
            out.append((i, item))
        else:
            del left[j]
    return out


def _atomic_revert(before: tuple[list, list], after: tuple[list, list]) -> list[str]:
    """Entries a fixture's setup added and still there: out; entries it removed: back (``StateSpec.revert``)."""
    module = _atomic()
    live = module.ATOMIC_SUBGRAPHS
    if not isinstance(live, list):
        return []
    done = revert_list(live, before[1], after[1])
    if done.taken_out or done.put_back:
        _clear_traced(module)
    return ([f"added ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for _, e in done.taken_out]
            + [f"removed ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for _, e in done.put_back])


# --- lowering pass managers ----------------------------------------------------------------------------------


def _passname_of(fn: Any) -> str:
    return getattr(fn, "__name__", None) or repr(fn)


def pass_manager_spec(manager: str, label: str, noun: str) -> StateSpec:
    """A pass manager's ``passes`` list, held by value and identity; ``noun`` names a pass in leak reports."""

    def pm() -> Any:
        return getattr(sys.modules[PASSES_MODULE], manager)

    def snapshot() -> tuple[Any, list, list]:
        return (pm(), pm().passes, list(pm().passes))

    def changed(snap: tuple[Any, list, list]) -> bool:
        now = getattr(sys.modules[PASSES_MODULE], manager)
        return now is not snap[0] or now.passes is not snap[1] or now.passes != snap[2]

    def restore(snap: tuple[Any, list, list]) -> None:
        setattr(sys.modules[PASSES_MODULE], manager, snap[0])
        snap[1][:] = snap[2]
        snap[0].passes = snap[1]

    def lines(added: list[tuple[int, Any]], removed: list[tuple[int, Any]]) -> list[str]:
        return ([f"added {noun} {_passname_of(p)} at index {i}" for i, p in added]
                + [f"removed {noun} {_passname_of(p)} from index {i}" for i, p in removed])

    def describe(snap: tuple[Any, list, list]) -> list[str]:
        rebound = [f"{manager} rebound"] if pm() is not snap[0] else []
        now = list(pm().passes)
        return rebound + lines(multiset_missing(now, snap[2]), multiset_missing(snap[2], now)) or [
            f"{manager} passes reordered"]

    def revert(before: tuple[Any, list, list], after: tuple[Any, list, list]) -> list[str]:
        live = pm().passes
        if not isinstance(live, list):
            return []
        return lines(*revert_list(live, before[2], after[2]))

    return StateSpec(label, snapshot, restore, changed, describe, available=_loaded(PASSES_MODULE), revert=revert)


# --- tables (op or rule id -> function): decompositions, constant-fold exclusion rules ---------------------------


def table_spec(module_name: str, table: str, noun: str) -> StateSpec:
    """A module-level dict held by value.

    ``noun`` names an entry in leak reports (``aten.relu.default: noun added``).
    """

    def module() -> Any:
        return sys.modules[module_name]

    def snapshot() -> tuple[dict, dict, list]:
        d = getattr(module(), table)
        return (d, dict(d), [None])  # the last: where it was last found unchanged (``same_dict``)

    def changed(snap: tuple[dict, dict, list]) -> bool:
        d = getattr(sys.modules[module_name], table)  # (``module()``, without a call: asked at every check)
        return d is not snap[0] or not same_dict(d, snap[1], snap[2])

    def restore(snap: tuple[dict, dict]) -> None:
        snap[0].clear()
        snap[0].update(snap[1])
        setattr(module(), table, snap[0])

    def describe(snap: tuple[dict, dict]) -> list[str]:
        return _table_lines(getattr(module(), table), snap[1], noun) or [f"{table} rebound"]

    def revert(before: tuple[dict, dict], after: tuple[dict, dict]) -> list[str]:
        live = getattr(module(), table)
        return _table_lines(*_revert_table(live, before[1], after[1]), noun) if isinstance(live, dict) else []

    return StateSpec(table, snapshot, restore, changed, describe, available=_loaded(module_name), revert=revert)


def _table_lines(now: dict, before: dict, noun: str) -> list[str]:
    """``aten.relu.default: decomposition added``: each entry of ``now`` new, gone or replaced since ``before``."""
    key = lambda k: k if isinstance(k, str) else name_of(k)  # noqa: E731
    out = [f"{key(k)}: {noun} added" for k in now.keys() - before.keys()]
    out += [f"{key(k)}: {noun} removed" for k in before.keys() - now.keys()]
    out += [f"{key(k)}: {noun} replaced" for k in now.keys() & before.keys() if now[k] is not before[k]]
    return sorted(out)



_ABSENT = object()  # a key not in a table


def _revert_table(live: dict, before: dict, after: dict) -> tuple[dict, dict]:
    """Take the change ``before`` -> ``after`` out of ``live`` where each entry is still as it left it; the entries
    taken out as (as it left them, as they were), for ``_table_lines``."""
    left, was = {}, {}
    for k in after.keys() | before.keys():
        if k in after and live.get(k, _ABSENT) is not after[k]:
            continue  # removed or replaced since, or unchanged by it
        if k in before and (k in after and before[k] is after[k] or k not in after and k in live):
            continue  # unchanged by it, or re-added since it removed it
        if k in after:
            left[k] = after[k]
        if k in before:
            was[k] = live[k] = before[k]
        else:
            del live[k]
    return left, was


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
    reg = registry()
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
    reg = registry()
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
    reg = registry()
    out = _field_changes(snap)
    if reg.compilation_settings is not snap.settings:
        return out
    now, before = set(reg.disallowed_targets or ()), set(snap.disallowed_contents or ())
    out += sorted([f"disallowed_targets: {name_of(t)} added" for t in now - before]
                  + [f"disallowed_targets: {name_of(t)} removed" for t in before - now])
    return out


# --- the guards' own state --------------------------------------------------------------------------------------


def _guards_snapshot() -> Any:
    """The guard library's public snapshot, imported with this module at the first hold: declarations can be made
    in any test, so the baseline must exist before the first one runs (importing it at plugin load would cost every
    pytest run)."""
    return state_snapshot(fired=False)  # fired counts grow by design


def _guards_changed(snap: Any) -> bool:
    """Compared by value where the classes differ: an in-process pytester run drops the guards' modules it loaded,
    and the reloaded module's snapshot class never equals the baseline's, however equal the state. (Checked for
    every test: the common case stays one comparison.)"""
    now = _guards_snapshot()
    if now is snap:  # ``state_snapshot`` hands the same one back while nothing changed
        return False
    if type(now) is type(snap):
        return now != snap
    return _fields(now) != _fields(snap)


def _fields(snap: Any) -> tuple:
    return tuple(getattr(snap, field.name) for field in dataclasses.fields(snap) if field.compare)


def _guards_restore(snap: Any) -> None:
    restore_state(snap)


def _guards_describe(snap: Any) -> list[str]:
    return describe_changes(snap, _guards_snapshot()) or ["guards: state changed"]


# --- the guards' builder wrapper on TRTInterpreter --------------------------------------------------------------


_MISSING = object()  # the class had no populate function of its own


def _interpreter() -> Any:
    return sys.modules[INTERPRETER_MODULE].TRTInterpreter


def _builder_snapshot() -> Any:
    """The populate function, by identity: ``trtcap_guards.install()``/``uninstall()`` swap it with the registry's
    guards, and both must come back together (or every later engine is built without the declared targets)."""
    return _interpreter().__dict__.get(POPULATE, _MISSING)


def _builder_changed(snap: Any) -> bool:
    return _builder_snapshot() is not snap


def _builder_restore(snap: Any) -> None:
    if snap is _MISSING:
        if POPULATE in _interpreter().__dict__:
            delattr(_interpreter(), POPULATE)
    else:
        setattr(_interpreter(), POPULATE, snap)


def _builder_describe(snap: Any) -> list[str]:
    now, where = _builder_snapshot(), f"TRTInterpreter.{POPULATE}"
    if is_builder_wrapper(now) and not is_builder_wrapper(snap):
        return [f"{where}: trtcap_guards' builder wrapper added"]
    if is_builder_wrapper(snap) and not is_builder_wrapper(now):
        return [f"{where}: trtcap_guards' builder wrapper removed"]
    return [f"{where} replaced"]


def builtin_specs(list_all: bool = False) -> list[StateSpec]:
    """One spec per held piece of state; labels are the ones the inventory refers to. ``list_all``
    (``-v``): a leak line names every changed converter target, not the first few of each registry."""
    return [
        StateSpec("converter registry", reg.registry_snapshot, reg.registry_restore, reg.registry_changed,
                  functools.partial(reg.registry_describe, list_all=list_all), available=_loaded(REGISTRY_MODULE),
                  revert=functools.partial(reg.registry_revert, list_all=list_all)),
        StateSpec("builder wrapper", _builder_snapshot, _builder_restore, _builder_changed, _builder_describe,
                  available=lambda: hasattr(sys.modules.get(INTERPRETER_MODULE), "TRTInterpreter")),
        StateSpec("converter registry settings", settings_snapshot, settings_restore,
                  settings_changed, settings_describe, available=_loaded(REGISTRY_MODULE)),
        StateSpec("ATOMIC_SUBGRAPHS", _atomic_snapshot, _atomic_restore, _atomic_changed, _atomic_describe,
                  available=_loaded(ATOMIC_MODULE), revert=_atomic_revert),
        pass_manager_spec("ATEN_PRE_LOWERING_PASSES", "ATEN_PRE_LOWERING_PASSES", "pre-lowering pass"),
        pass_manager_spec("ATEN_POST_LOWERING_PASSES", "ATEN_POST_LOWERING_PASSES", "lowering pass"),
        table_spec(DECOMPOSITIONS_MODULE, "TORCH_TRT_DECOMPOSITIONS", "decomposition"),
        table_spec(DECOMPOSITIONS_MODULE, "ENABLED_TORCH_DECOMPOSITIONS", "enabled torch decomposition"),
        table_spec(FOLD_EXCLUSIONS_MODULE, "_CONSTANT_FOLD_EXCLUSION_RULES", "constant-fold exclusion rule"),
        StateSpec("guards", _guards_snapshot, _guards_restore, _guards_changed, _guards_describe),
    ]
