"""Hold Torch-TensorRT's global registries around each test, name the test that leaks, restore in place.

One list of state specs is the single source of truth. A spec holds a baseline; a test is checked with one
C-level equality per spec (no copy), and a copy is taken only when the state really changed, so a clean
test costs a few microseconds. Restoration is in place: other modules imported these objects by name.
Nothing here imports torch_tensorrt: a spec is active only once its module is in ``sys.modules``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

REGISTRY_MODULE = "torch_tensorrt.dynamo.conversion._ConverterRegistry"
ATOMIC_MODULE = "torch_tensorrt.dynamo.partitioning._atomic_subgraphs"


@dataclass
class StateSpec:
    """How to hold one piece of global state."""

    label: str
    snapshot: Callable[[], Any]
    restore: Callable[[Any], None]
    changed: Callable[[Any], bool]  # cheap exact check against a snapshot
    describe: Callable[[Any], List[str]]  # what changed, for the leak report
    silent: bool = False  # restored without being reported as a leak
    available: Callable[[], bool] = lambda: True


# --- converter registry ----------------------------------------------------------------------------


def _registry() -> Any:
    return sys.modules[REGISTRY_MODULE].DYNAMO_CONVERTERS


def _registry_dicts() -> List[Dict[Any, Any]]:
    return [r for r in _registry().registries if isinstance(r, dict)]


def _registry_snapshot() -> Tuple[Tuple[Dict[Any, Any], Dict[Any, Any], Dict[Any, list]], ...]:
    return tuple((d, dict(d), {k: list(v) if isinstance(v, list) else v for k, v in d.items()})
                 for d in _registry_dicts())


def _registry_changed(snap: Any) -> bool:
    # Twice per test: one pass over the registries, no intermediate list; one C-level equality per dict.
    count = 0
    for d in _registry().registries:
        if not isinstance(d, dict):
            continue
        if count == len(snap):
            return True
        held, _, contents = snap[count]
        if d is not held or d != contents:
            return True
        count += 1
    return count != len(snap)


def _registry_restore(snap: Any) -> None:
    for d, objects, contents in snap:
        d.clear()
        for key, obj in objects.items():
            if isinstance(obj, list):
                obj[:] = contents[key]
            d[key] = obj


def _name(target: Any) -> str:
    from trtcap_guards.rules import target_name_of

    return target_name_of(target)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _registry_describe(snap: Any) -> List[str]:
    out: List[str] = []
    for d, _, contents in snap:
        for key in d.keys() - contents.keys():
            out.append(f"{_name(key)}: target added ({_plural(len(d[key]) if isinstance(d[key], list) else 1, 'converter')})")
        for key in contents.keys() - d.keys():
            out.append(f"{_name(key)}: target removed")
        for key in contents.keys() & d.keys():
            before, after = contents[key], d[key]
            if before == after:
                continue
            if not isinstance(after, list) or not isinstance(before, list):
                out.append(f"{_name(key)}: converter replaced")
                continue
            added = sum(1 for c in after if not any(c is b for b in before))
            removed = sum(1 for b in before if not any(b is c for c in after))
            parts = []
            if added and removed and added == removed:
                parts.append(f"{_plural(added, 'converter')} replaced")
            else:
                if added:
                    parts.append(f"{_plural(added, 'converter')} added")
                if removed:
                    parts.append(f"{_plural(removed, 'converter')} removed")
            out.append(f"{_name(key)}: {', '.join(parts) or 'converters reordered'}")
    return sorted(out)


def _settings_snapshot() -> Tuple[Any, Any]:
    reg = _registry()
    return (reg.compilation_settings, reg.disallowed_targets)


def _settings_changed(snap: Tuple[Any, Any]) -> bool:
    reg = _registry()
    return reg.compilation_settings is not snap[0] or reg.disallowed_targets is not snap[1]


def _settings_restore(snap: Tuple[Any, Any]) -> None:
    reg = _registry()
    reg.compilation_settings, reg.disallowed_targets = snap


# --- ATOMIC_SUBGRAPHS --------------------------------------------------------------------------------


def _atomic() -> Any:
    return sys.modules[ATOMIC_MODULE]


def _atomic_snapshot() -> Tuple[list, list]:
    lst = _atomic().ATOMIC_SUBGRAPHS
    return (lst, list(lst))


def _atomic_changed(snap: Tuple[list, list]) -> bool:
    lst = _atomic().ATOMIC_SUBGRAPHS
    return lst is not snap[0] or lst != snap[1]


def _atomic_restore(snap: Tuple[list, list]) -> None:
    module = _atomic()
    held, contents = snap
    held[:] = contents
    module.ATOMIC_SUBGRAPHS = held
    trace = getattr(module, "trace_atomic_graph", None)
    if hasattr(trace, "cache_clear"):
        trace.cache_clear()


def format_atomic_entry(entry: Any) -> str:
    """``(ReLUConv, (), True)``: class name, init args, is_core_aten."""
    try:
        cls, init_args, core = entry
        args = ", ".join(_name(a) if callable(a) else repr(a) for a in init_args)
        args = f"({args},)" if len(init_args) == 1 else f"({args})"
        return f"({getattr(cls, '__name__', cls)}, {args}, {core})"
    except (TypeError, ValueError):
        return repr(entry)


def _atomic_describe(snap: Tuple[list, list]) -> List[str]:
    now = _atomic().ATOMIC_SUBGRAPHS
    before = snap[1]
    out = [f"added ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for e in now if e not in before]
    out += [f"removed ATOMIC_SUBGRAPHS entry {format_atomic_entry(e)}" for e in before if e not in now]
    return out or ["ATOMIC_SUBGRAPHS reordered"]


# --- the guards' own state ----------------------------------------------------------------------------


def _guards_snapshot() -> Any:
    # The spec is active only once guards.registry is imported: read it from sys.modules rather than
    # run an import statement twice per test.
    return sys.modules["trtcap_guards.registry"].state_snapshot()


def _guards_changed(snap: Any) -> bool:
    return _guards_snapshot() != snap


def _guards_restore(snap: Any) -> None:
    from trtcap_guards import registry

    registry.restore_state(snap)


def _guards_describe(snap: Any) -> List[str]:
    now = _guards_snapshot()[0]
    before = snap[0]
    out = [f"guards: left neutralized {t}" for t in sorted(now.keys() - before.keys())]
    out += [f"guards: un-neutralized {t}" for t in sorted(before.keys() - now.keys())]
    return out or ["guards: neutralize state changed"]


def builtin_specs() -> List[StateSpec]:
    loaded = lambda name: (lambda: name in sys.modules)  # noqa: E731
    return [
        StateSpec("converter registry", _registry_snapshot, _registry_restore, _registry_changed,
                  _registry_describe, available=loaded(REGISTRY_MODULE)),
        StateSpec("converter registry settings", _settings_snapshot, _settings_restore,
                  _settings_changed, lambda s: [], silent=True,
                  available=loaded(REGISTRY_MODULE)),
        StateSpec("ATOMIC_SUBGRAPHS", _atomic_snapshot, _atomic_restore, _atomic_changed, _atomic_describe,
                  available=loaded(ATOMIC_MODULE)),
        StateSpec("guards", _guards_snapshot, _guards_restore, _guards_changed, _guards_describe,
                  available=loaded("trtcap_guards.registry")),
    ]


def user_spec(label: str, snapshot: Callable[[], Any], restore: Callable[[Any], None]) -> StateSpec:
    """A spec from ``pytest_trtcap_isolated_state``: compared with ``!=``, reported under its label."""
    return StateSpec(str(label), snapshot, restore, lambda snap: snapshot() != snap,
                     lambda snap: [f"{label} changed"])


@dataclass
class Leak:
    nodeid: str
    changes: List[str]

    def describe(self) -> str:
        return "; ".join(self.changes)


class Isolation:
    """Baselines per spec; ``hold()`` after a test's setup, ``release()`` before its teardown."""

    def __init__(self, specs: Iterable[StateSpec]) -> None:
        self.specs = list(specs)
        self.baselines: Dict[str, Any] = {}

    def _active(self) -> List[StateSpec]:
        return [s for s in self.specs if s.available()]

    def hold(self) -> None:
        """Make the current state the baseline; copies only what changed since the last baseline."""
        baselines = self.baselines
        for spec in self.specs:  # the loop of _active(), inlined: hold and release run for every test
            if not spec.available():
                continue
            base = baselines.get(spec.label)
            if base is None or spec.changed(base):
                baselines[spec.label] = spec.snapshot()

    def release(self) -> List[str]:
        """Compare with the baseline, restore what changed in place, return the reportable changes."""
        changes: List[str] = []
        baselines = self.baselines
        for spec in self.specs:
            if not spec.available():
                continue
            base = baselines.get(spec.label)
            if base is None or not spec.changed(base):
                continue
            if not spec.silent:
                try:
                    changes.extend(spec.describe(base))
                except Exception as exc:  # a report must never hide the restore
                    changes.append(f"{spec.label} changed ({type(exc).__name__} while describing)")
            spec.restore(base)
        return changes
