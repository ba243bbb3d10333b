"""The isolation contract as a model of held state: who changed each held object, and the judgement when they end.

Units are a test (with its function-scoped fixtures and every finalizer that ends with it) and a fixture of a wider
scope; the drive (``drive``) says which unit runs now and when each ends. At every such boundary each held object
is compared with its state at the last one: a change is the running unit's, kept in a *layer* (its owners, and the
object's state before them). When a unit ends, its layers (and any above them) must be back to that state:

* nobody else who made a layer above it is alive: judged now. Not back: a leak of those owners, put back;
* one of them is alive: the changes are entangled (values cannot tell them apart), so they are judged together when
  the last of those owners ends, and a leak names every one of them ("fixture 'a' or test x").

Nothing here knows pytest: ``tests/isolation_oracle.py`` checks the drive against a model written apart from it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..escaping import one_line
from .held_state import StateSpec


@dataclass(eq=False)
class Unit:
    """A test, a fixture of a wider scope, or the finalizers a teardown runs after its fixtures ended."""

    subject: str  # how a leak names it
    kind: str  # "test", "fixture", "node", "outside"
    alive: bool = True
    adopt: bool = False  # ``trtcap_no_isolation``: what it leaves is kept, and becomes the baseline


@dataclass(eq=False)
class Layer:
    owners: list[Unit]  # who changed the object
    before: Any  # the held object's snapshot before the first of their changes
    waiters: list[Unit] = field(default_factory=list)  # still running code that may put it back (not changers)
    made: dict[str, list[Unit]] = field(default_factory=dict)  # a leak line -> whose runs produced it
    after: Any = None  # the snapshot after its last change


@dataclass
class Leak:
    owners: list[Unit]
    lines: list[str]

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


@dataclass
class Ledger:
    """The held objects' state at the last boundary, and the layers of changes not judged yet."""

    specs: list[StateSpec] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)  # label -> snapshot at the last boundary
    layers: dict[str, list[Layer]] = field(default_factory=dict)
    pristine: dict[str, Any] = field(default_factory=dict)  # label -> state before an adopted change

    def add(self, spec: StateSpec, baseline: Any = None) -> None:
        """Hold ``spec`` from now on (``baseline``: its state before a change already under way)."""
        if all(s.label != spec.label for s in self.specs):
            self.specs.append(spec)
            if spec.available():
                self.last[spec.label] = spec.snapshot() if baseline is None else baseline

    def see_new(self) -> None:
        """Baseline the specs that became available (Torch-TensorRT was imported, wherever that happened)."""
        for spec in self.specs:
            if spec.label not in self.last and spec.available():
                self.last[spec.label] = spec.snapshot()

    def _live(self) -> list[StateSpec]:
        return [spec for spec in self.specs if spec.available()]

    def boundary(self, owner: Unit) -> None:
        """A boundary of ``owner``'s run: what changed since the last one is its change."""
        for spec in self._live():
            label = spec.label
            before = self.last.get(label)
            if before is None:
                self.last[label] = spec.snapshot()
                continue
            if not spec.changed(before):
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
        leaks = []
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

    def alive(self) -> bool:
        """Whether any layer waits for a unit still alive."""
        return any(self.layers.values())


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
