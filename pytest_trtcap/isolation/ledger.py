"""The isolation contract as a model of held state: who changed each held object, and the judgement when they end.

Units are a test (with its function-scoped fixtures and every finalizer that ends with it) and a fixture of a wider
scope; the drive (``drive``) says which unit runs now and when each ends. At every such boundary each held object
is compared with its state at the last one: a change is the running unit's, kept in a *layer* (its owners, and the
object's state before them). When a unit ends, its layers (and any above them) must be back to that state:

* nobody else who made a layer above it is alive: judged now. Not back: a leak of those owners, put back;
* one of them is alive: where the object can have one change taken out (a registry, a list, a table) and nothing
  came between, the ended unit's own change is taken out and named now; else the changes are entangled (values
  cannot tell them apart), so they are judged together when the last of those owners ends.

A line left at the judgement names the one owner whose run produced that very change, where only one did; else
every owner ("fixture 'a' ... or test_x").

Nothing here knows pytest: ``tests/isolation_oracle.py`` checks the drive against a model written apart from it.

PYTEST_DONT_REWRITE: loaded in every pytest run (isolation acts in every session); no assert to rewrite.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import Any

from ..escaping import one_line


class StateSpec:
    """How to hold one piece of global state. ``describe`` returning nothing restores silently. (A plain class, as
    are the others here: the plugin loads this module in every pytest run, and a dataclass costs a millisecond.)"""

    __slots__ = ("label", "snapshot", "restore", "changed", "describe", "available", "failure", "unrestored",
                 "revert")

    def __init__(self, label: str, snapshot: Callable[[], Any], restore: Callable[[Any], None],
                 changed: Callable[[Any], bool], describe: Callable[[Any], list[str]],
                 available: Callable[[], bool] = lambda: True,
                 revert: Callable[[Any, Any], list[str]] | None = None) -> None:
        self.label, self.snapshot, self.restore, self.changed = label, snapshot, restore, changed
        self.describe = describe  # what changed since the snapshot, for the leak report
        self.available = available
        self.failure = ""  # a project's entry whose code raised: the error to report (``user_spec``)
        self.unrestored = ""  # its last restore() raised: what its leak lines end with
        # Take the change ``before`` -> ``after`` (one unit's run) out of the live state, in place, where it is
        # still there untouched; return lines naming what was taken out, worded like ``describe``'s
        # (``Ledger._take_out``).
        self.revert = revert


def user_spec(label: str, snapshot: Callable[[], Any], restore: Callable[[Any], None], where: str = "") -> StateSpec:
    """A spec from ``pytest_trtcap_isolated_state``: compared with ``!=``, reported under its label.

    Its code is the project's, called from inside pytest's hooks: one that raises (or snapshots that refuse ``!=``:
    arrays, tensors) would break pytest's teardown. So a failure is kept on the spec as an error naming the hook, its
    file and the entry, the entry is held no longer, and the drive reports the error on the test in progress. Each
    snapshot is boxed in a 1-tuple, so that any value, None included, is a snapshot."""
    spec = StateSpec(str(label), snapshot, restore, lambda _snap: False, lambda _snap: [f"{label} changed"])

    def failed(step: str, exc: Exception) -> None:
        from ..hook_results import entry_failure

        spec.failure = spec.failure or entry_failure(where, label, step, exc)

    def held_snapshot() -> Any:
        try:
            return (snapshot(),)
        except Exception as exc:  # the project's code: reported, never raised through a pytest hook
            failed("snapshot", exc)
            return (None,)

    def changed(snap: Any) -> bool:
        now = held_snapshot()
        if spec.failure:
            return False
        try:
            return bool(now[0] != snap[0])
        except Exception as exc:  # an elementwise result with no truth value, or a comparison that raises
            failed("compare", exc)
            return False

    def held_restore(snap: Any) -> None:
        try:
            restore(snap[0])
        except Exception as exc:  # the state stays as the test left it; the error and the leak line say so
            failed("restore", exc)
            spec.unrestored = f"(not restored: the restore() of entry {label!r} failed)"

    spec.snapshot, spec.changed, spec.restore = held_snapshot, changed, held_restore
    spec.available = lambda: not spec.failure
    return spec

class Unit:
    """A test, a fixture of a wider scope, or the finalizers a teardown runs after its fixtures ended."""

    __slots__ = ("subject", "kind", "alive", "adopt")

    def __init__(self, subject: str, kind: str, adopt: bool = False) -> None:
        self.subject = subject  # how a leak names it
        self.kind = kind  # "test", "fixture", "node" or "outside"
        self.alive = True
        self.adopt = adopt  # ``trtcap_no_isolation`` or outside every test: what it leaves becomes the baseline


class Layer:
    """Changes to one held object not judged yet: who made them, and the object before them."""

    __slots__ = ("owners", "before", "waiters", "made", "after")

    def __init__(self, owners: list[Unit], before: Any, waiters: list[Unit] | None = None) -> None:
        self.owners = owners  # who changed the object
        self.before = before  # its snapshot before the first of their changes
        self.waiters = waiters or []  # still running code that may put it back (not changers)
        self.made: dict[str, list[Unit]] = {}  # a leak line (``_what``) -> whose runs produced it
        self.after: Any = None  # the snapshot after its last change


class Leak:
    """What a judgement found left changed, and whom it names."""

    __slots__ = ("owners", "lines")

    def __init__(self, owners: list[Unit], lines: list[str]) -> None:
        self.owners, self.lines = owners, lines

    @property
    def subject(self) -> str:
        named = [u for u in self.owners if u.kind != "node"] or self.owners
        return " or ".join(dict.fromkeys(u.subject for u in named))

    @property
    def kind(self) -> str:
        """"test" where a test is among those named, else the kind of the first named."""
        kinds = [u.kind for u in self.owners if u.kind != "node"] or [self.owners[0].kind]
        return "test" if "test" in kinds else kinds[0]


#: Ends a leak line whose restore failed: "restored" must be true.
NOT_RESTORED = "(not restored: "


class Ledger:
    """The held objects' state at the last boundary, and the layers of changes not judged yet."""

    def __init__(self, specs: list[StateSpec] | None = None) -> None:
        self.specs: list[StateSpec] = list(specs or ())
        self.last: dict[str, Any] = {}  # label -> snapshot at the last boundary
        self.layers: dict[str, list[Layer]] = {}
        self.pristine: dict[str, Any] = {}  # label -> state before an adopted change
        self._live_key: tuple[int, int] | None = None
        self._live_specs: list[StateSpec] = []

    def add(self, spec: StateSpec) -> None:
        """Hold ``spec`` from now on, from its state now."""
        if all(s.label != spec.label for s in self.specs):
            self.specs.append(spec)
            if spec.available():
                self.last[spec.label] = spec.snapshot()

    def see_new(self) -> None:
        """Baseline the specs that became available (Torch-TensorRT was imported, wherever that happened)."""
        for spec in self.specs:
            if spec.label not in self.last and spec.available():
                self.last[spec.label] = spec.snapshot()

    def _live(self) -> list[StateSpec]:
        """The specs whose module is loaded: asked again when a module came or went (or a spec was added)."""
        key = (len(sys.modules), len(self.specs))
        if key != self._live_key:
            self._live_key, self._live_specs = key, [spec for spec in self.specs if spec.available()]
        return self._live_specs

    def boundary(self, owner: Unit) -> None:
        """A boundary of ``owner``'s run: what changed since the last one is its change."""
        for spec in self._live():
            label = spec.label
            before = self.last.get(label)
            if before is None:
                self.last[label] = spec.snapshot()
                continue
            try:
                if not spec.changed(before):
                    continue
            except (KeyError, AttributeError):  # its module went (and another came: as many as before)
                if spec.available():
                    raise
                self._live_key = None
                continue
            stack = self.layers.setdefault(label, [])
            if not (stack and any(u is owner for u in stack[-1].owners)):
                stack.append(Layer([owner], before))
            for line in _describe(spec, before):  # so that a line left at the end can name who made it
                makers = stack[-1].made.setdefault(_what(line), [])
                if owner not in makers:
                    makers.append(owner)
            self.last[label] = stack[-1].after = spec.snapshot()

    def end(self, unit: Unit, defer_to: Unit | None = None) -> list[Leak]:
        """``unit`` ended (its last run closed by ``boundary``): judge what it owns. ``defer_to``: a unit still
        running (the rest of a teardown) that may yet put back what ``unit`` left: judged when that one ends."""
        unit.alive = False
        leaks: list[Leak] = []
        if not self.layers:  # nothing changed since the last judgement (the usual test)
            return leaks
        for spec in self._live():
            stack = self.layers.get(spec.label)
            index = next((i for i, layer in enumerate(stack or ()) if unit in layer.owners + layer.waiters), None)
            if stack is None or index is None:
                continue
            taken = self._take_out(spec, stack, index, unit)
            if taken is not None:
                leaks += taken
                continue
            merged = Layer(_union(layer.owners for layer in stack[index:]), stack[index].before,
                           _union(layer.waiters for layer in stack[index:]))
            for layer in stack[index:]:
                for line, makers in layer.made.items():
                    merged.made[line] = _union([merged.made.get(line, []), makers])
            del stack[index:]
            if defer_to is not None:
                if not spec.changed(merged.before):
                    self.last[spec.label] = merged.before
                    continue
                merged.waiters.append(defer_to)
            if any(u.alive for u in merged.owners + merged.waiters):
                stack.append(merged)
                continue
            leaks += self._judge(spec, merged)
        for label in [label for label, stack in self.layers.items() if not stack]:
            del self.layers[label]
        return leaks

    def _take_out(self, spec: StateSpec, stack: list[Layer], index: int, unit: Unit) -> list[Leak] | None:
        """``unit`` ended under a later unit still alive that changed the same object after it (a session fixture
        first requested inside a module): where the object can have one change taken out (a registry, a list, a
        table), what ``unit``'s own run left is taken out now, and the later unit's layer starts from before it.
        None where that cannot be done (the merged layers then wait for the later unit)."""
        layer = stack[index]
        above = stack[index + 1:]
        if (spec.revert is None or layer.owners != [unit] or layer.waiters or not above or layer.after is None
                or above[0].before is not layer.after or not any(u.alive for a in above for u in a.owners)):
            return None
        lines = [one_line(str(line)) for line in spec.revert(layer.before, layer.after)]
        above[0].before = layer.before
        del stack[index]
        self.last[spec.label] = spec.snapshot()
        return [Leak([unit], lines)] if lines else []

    def _judge(self, spec: StateSpec, layer: Layer) -> list[Leak]:
        """Every owner of ``layer`` has ended: the object must be as it was before them. Each line left names the
        one owner whose run produced it, where only one did; else every owner."""
        label = spec.label
        if not spec.changed(layer.before):
            self.last[label] = layer.before
            return []
        if all(u.adopt for u in layer.owners):  # opted out: kept, and what it was before is remembered
            self.pristine.setdefault(label, layer.before)
            return []
        clean = self.pristine.get(label)
        if clean is not None and not spec.changed(clean):  # put back as it was before an adopted change
            del self.pristine[label]
            self.last[label] = clean
            return []
        lines = _describe(spec, layer.before)
        spec.unrestored = ""
        spec.restore(layer.before)
        self.last[label] = layer.before
        if spec.unrestored:
            lines = [f"{line} {spec.unrestored}" for line in lines]
        by_owners: dict[tuple[int, ...], Leak] = {}
        for line in lines:
            makers = [u for u in layer.made.get(_what(line.removesuffix(f" {spec.unrestored}")), [])
                      if u in layer.owners]
            owners = makers if len(makers) == 1 else layer.owners
            key = tuple(id(u) for u in owners)
            by_owners.setdefault(key, Leak(owners, [])).lines.append(line)
        return list(by_owners.values())


def _what(line: str) -> str:
    """A leak line without what the object was before (``, was 0``): the same change reads the same whoever's
    state it was compared with."""
    return re.split(r", (?:were|was) ", line, maxsplit=1)[0]


def _union(groups: Any) -> list[Unit]:
    return list(dict.fromkeys(u for group in groups for u in group))


def _describe(spec: StateSpec, before: Any) -> list[str]:
    try:
        return [one_line(str(line)) for line in spec.describe(before)]
    except Exception as exc:  # a report must never hide the restore
        return [f"{spec.label} changed ({type(exc).__name__} while describing)"]
