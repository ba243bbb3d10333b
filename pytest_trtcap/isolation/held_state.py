"""What isolation holds of Torch-TensorRT's process-wide state, and how each piece is compared and put back.

Every spec compares by value against an immutable copy (one C-level equality on a clean test) and restores in
place: Torch-TensorRT's modules and the suite's tests imported these objects by name, so rebinding them would
leave every other holder on the changed object. Nothing here imports torch_tensorrt: a spec is active only once
its module is in ``sys.modules``. ``inventory`` says which spec holds what, and why the rest is not.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any

from trtcap_guards import restore_state, state_snapshot
from trtcap_guards.tooling import INTERPRETER_MODULE, POPULATE, describe_changes, is_builder_wrapper

from . import held_registry as reg
from .compare import multiset_missing, name_of, revert_list, same_dict
from .held_registry import REGISTRY_MODULE
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
    """One spec per held piece of state; labels are the ones ``inventory`` refers to. ``list_all``
    (``-v``): a leak line names every changed converter target, not the first few of each registry."""
    return [
        StateSpec("converter registry", reg.registry_snapshot, reg.registry_restore, reg.registry_changed,
                  functools.partial(reg.registry_describe, list_all=list_all), available=_loaded(REGISTRY_MODULE),
                  revert=functools.partial(reg.registry_revert, list_all=list_all)),
        StateSpec("builder wrapper", _builder_snapshot, _builder_restore, _builder_changed, _builder_describe,
                  available=lambda: hasattr(sys.modules.get(INTERPRETER_MODULE), "TRTInterpreter")),
        StateSpec("converter registry settings", reg.settings_snapshot, reg.settings_restore,
                  reg.settings_changed, reg.settings_describe, available=_loaded(REGISTRY_MODULE)),
        StateSpec("ATOMIC_SUBGRAPHS", _atomic_snapshot, _atomic_restore, _atomic_changed, _atomic_describe,
                  available=_loaded(ATOMIC_MODULE), revert=_atomic_revert),
        pass_manager_spec("ATEN_PRE_LOWERING_PASSES", "ATEN_PRE_LOWERING_PASSES", "pre-lowering pass"),
        pass_manager_spec("ATEN_POST_LOWERING_PASSES", "ATEN_POST_LOWERING_PASSES", "lowering pass"),
        table_spec(DECOMPOSITIONS_MODULE, "TORCH_TRT_DECOMPOSITIONS", "decomposition"),
        table_spec(DECOMPOSITIONS_MODULE, "ENABLED_TORCH_DECOMPOSITIONS", "enabled torch decomposition"),
        table_spec(FOLD_EXCLUSIONS_MODULE, "_CONSTANT_FOLD_EXCLUSION_RULES", "constant-fold exclusion rule"),
        StateSpec("guards", _guards_snapshot, _guards_restore, _guards_changed, _guards_describe),
    ]
