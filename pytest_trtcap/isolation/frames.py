"""Hold global state around each test and each fixture, name whoever leaks, restore in place.

One list of state specs (``held_state.builtin_specs()`` plus the suite's own from a hook) is the single source
of truth. Each spec keeps a baseline: an immutable copy compared with one C-level equality, re-copied only when
the state really changed, so a clean test costs one comparison per held object at its start and one at its end.

State changed outside every test and fixture (say, by another plugin's teardown hook after the plugin's check)
is found by the next test's check and counted as that test's.

The rule, per scope:

* a test is held from the start of its setup until its body's own finalizers have run, before its fixtures end:
  what it leaves changed is its leak;
* a fixture (any scope, unittest ``setUpClass`` included) may change the state while it is alive: its changes
  become the baseline when its setup ends. When its teardown has run, the state must be as it was before its
  setup; what is not is that fixture's leak, named then and restored then;
* nothing is restored from under a fixture still alive. Fixtures mostly end in the reverse order they started;
  where one ends before a fixture started after it (a session fixture first requested while a module fixture is
  alive), each held object is checked only if no fixture started after it changed that object since; otherwise
  that object is not checked for either of them, except that a collection held with a ``revert`` (a registry, a
  list, a table) has what the ended fixture's setup added or removed, and nobody has touched since, taken out:
  named as that fixture's leak, so it never reaches the next module (equality alone cannot tell: an undo handle
  undone out of order hands its "before" on, so the state at its end may equal a later fixture's own);
* a fixture not checked for an object (so, also, one set up while the session was dormant: it has no frame) ends
  as its own clean-up: what its teardown leaves of that object is kept as the baseline, never blamed on the next
  test nor put back to the value of a fixture already gone;
* a change made outside any isolated test (a ``trtcap_no_isolation`` test) is adopted as the new baseline, and a
  later test that puts the state back exactly as it was before that change is not leaking: it cleaned up.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..escaping import one_line


@dataclass
class StateSpec:
    """How to hold one piece of global state. ``describe`` returning nothing restores silently."""

    label: str
    snapshot: Callable[[], Any]
    restore: Callable[[Any], None]
    changed: Callable[[Any], bool]  # cheap exact check against a snapshot
    describe: Callable[[Any], list[str]]  # what changed since the snapshot, for the leak report
    available: Callable[[], bool] = lambda: True
    failure: str = ""  # a project's entry whose code raised: the error to report (``user_spec``)
    unrestored: str = ""  # its last restore() raised: what its leak lines end with
    # Take the change a fixture's setup made (its snapshots ``before`` -> ``after``) out of the live state, in
    # place, where that change is still there untouched; return lines naming what was taken out, worded like
    # ``describe``'s. Only for an object changed under that fixture by one started after it (never per test).
    revert: Callable[[Any, Any], list[str]] | None = None


#: Ends a leak line whose restore failed: the summary's "restored" must be true.
NOT_RESTORED = "(not restored: "

_failures = [0]  # how often a project's entry failed in this process: a failed one is no longer available


def user_spec(label: str, snapshot: Callable[[], Any], restore: Callable[[Any], None], where: str = "") -> StateSpec:
    """A spec from ``pytest_trtcap_isolated_state``: compared with ``!=``, reported under its label.

    Its ``snapshot``, ``restore`` and comparison are the project's code, called from inside pytest's hooks: one
    that raises (or snapshots that refuse ``!=``: arrays, tensors) would end the session in a traceback or break
    pytest's teardown. So each failure is kept on the spec as an error naming the hook, its file and the entry, the
    entry is held no longer (it answers "unchanged" and is then unavailable), and the session reports the error on
    the test in progress. Each snapshot is boxed in a 1-tuple: any value, None included, is a snapshot (a baseline
    of None means "none taken yet" here)."""
    spec = StateSpec(str(label), snapshot, restore, lambda _snap: False, lambda _snap: [f"{label} changed"])

    def failed(step: str, exc: Exception) -> None:
        from ..hook_results import entry_failure

        spec.failure = spec.failure or entry_failure(where, label, step, exc)
        _failures[0] += 1

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
            spec.unrestored = f"{NOT_RESTORED}the restore() of entry {label!r} failed)"

    spec.snapshot, spec.changed, spec.restore = held_snapshot, changed, held_restore
    spec.available = lambda: not spec.failure
    return spec


@dataclass(eq=False)
class Frame:
    """A fixture alive between its setup and the end of its teardown."""

    fixture: Any  # the pytest FixtureDef
    before: dict[str, Any]  # baselines before its setup (a label missing: not checked at its end)
    after: dict[str, Any]  # baselines after its setup
    setup_for: str = ""  # the test whose setup started it

    def left_alone(self) -> bool:
        """Its setup changed no held object, and no label came into or left ``before`` since: ``after`` holds
        ``before``'s very baselines, label for label (compared in C: asked at a fixture's end)."""
        before, after = self.before, self.after
        return list(before) == list(after) and all(map(operator.is_, before.values(), after.values()))


class FixtureEnd(NamedTuple):
    """What a fixture left changed when its teardown ended, and the test whose setup started it."""

    setup_for: str
    changes: list[str]


class Isolation:
    """Baselines per spec, and the stack of live fixtures' frames."""

    def __init__(self, specs: list[StateSpec]) -> None:
        self.specs = list(specs)
        self.baselines: dict[str, Any] = {}
        self.pristine: dict[str, Any] = {}  # per spec: the state before a change made outside isolation
        self.frames: list[Frame] = []
        # True right after a release: the state equals the baselines, and every fixture torn down since is
        # checked by its frame, so the next test's hold need not compare again (one comparison per clean test).
        self.settled = False
        self.reported: list[int] = []  # id() of the specs whose failure was taken
        from .compare import version_view

        self._modules, self._modules_version = sys.modules, version_view(sys.modules)  # moves as modules come or go
        self._live_at: tuple[int | None, int] = (None, 0)
        self._live_specs: list[StateSpec] = []

    def _live(self) -> list[StateSpec]:
        """The specs available now, in order. Asked around every test and fixture, so each one's ``available`` is
        asked again only once something it answers from changed: ``sys.modules`` (a builtin spec is available while
        its module is loaded; where no version of it can be read, at every call), or a project's entry failed."""
        version = self._modules_version.value if self._modules_version is not None else None
        if (version is None or version != self._live_at[0] or _failures[0] != self._live_at[1]
                or sys.modules is not self._modules):
            self._live_specs = [spec for spec in self.specs if spec.available()]
            self._live_at = (version, _failures[0])
        return self._live_specs

    def take_failures(self) -> list[str]:
        """The errors of project entries that failed since the last call, each once: the session reports them on
        the test in progress."""
        if not _failures[0]:  # asked after every test: none has ever failed
            return []
        new = [spec for spec in self.specs if spec.failure and id(spec) not in self.reported]
        self.reported.extend(id(spec) for spec in new)
        return [spec.failure for spec in new]

    def adopt_new(self) -> None:
        """Baseline every spec that just became available (Torch-TensorRT was imported, wherever that happened).

        Frames already open get the same baseline: for them too, this was the state before.
        """
        if len(self.baselines) == len(self.specs):  # all baselined (asked as each fixture starts)
            return
        for spec in self.specs:
            if spec.label not in self.baselines and spec.available():
                base = self.baselines[spec.label] = spec.snapshot()
                for frame in self.frames:
                    frame.before.setdefault(spec.label, base)

    def _adopt(self, foreign: bool) -> None:
        baselines = self.baselines
        for spec in self._live():
            base = baselines.get(spec.label)
            if base is None:
                baselines[spec.label] = spec.snapshot()
            elif spec.changed(base):
                if foreign:
                    self.pristine.setdefault(spec.label, base)
                baselines[spec.label] = spec.snapshot()

    def hold(self) -> None:
        """Before a test's setup: what changed since the last check happened outside isolation; adopt it."""
        if self.settled:
            self.settled = False
            return
        self._adopt(foreign=True)

    def adopt_outside(self) -> None:
        """An opted-out test ended: what it changed is the baseline from now on (before any fixture ending with
        it is checked, so its change is never taken for that fixture's leak)."""
        self._adopt(foreign=True)

    def release(self) -> list[str]:
        """After a test: compare with the baseline, restore what changed in place, return what to report.

        A spec put back exactly to its state before a change made outside isolation is a clean-up: accepted.
        """
        changes: list[str] = []
        baselines = self.baselines
        for spec in self._live():
            base = baselines.get(spec.label)
            if base is None or not spec.changed(base):
                continue
            clean = self.pristine.get(spec.label)
            if clean is not None and not spec.changed(clean):
                baselines[spec.label] = clean
                del self.pristine[spec.label]
                continue
            changes.extend(self._put_back(spec, base, self._describe(spec, base)))
        self.settled = True
        return changes

    @staticmethod
    def _put_back(spec: StateSpec, base: Any, lines: list[str]) -> list[str]:
        """Restore ``spec`` to ``base``; ``lines`` (its leak) end saying so where the project's restore() failed."""
        spec.unrestored = ""
        spec.restore(base)
        return [f"{line} {spec.unrestored}" for line in lines] if spec.unrestored else lines

    @staticmethod
    def _describe(spec: StateSpec, base: Any) -> list[str]:
        try:
            return [one_line(str(line)) for line in spec.describe(base)]
        except Exception as exc:  # a report must never hide the restore
            return [f"{spec.label} changed ({type(exc).__name__} while describing)"]

    # --- fixtures ---------------------------------------------------------------------------------------

    def fixture_started(self, fixture: Any, setup_for: str, woken: bool = False) -> None:
        """A fixture's setup is about to run: open its frame with the baselines as they stand, one per spec, so
        that its end is checked (and its clean-up kept) for every spec.

        ``woken``: the session woke in this test's setup, inside fixtures set up with no frame; what they changed
        since is theirs, and this fixture found it so.
        """
        if woken:
            self._adopt(foreign=False)
        else:
            self.adopt_new()
        self.frames.append(Frame(fixture, dict(self.baselines), {}, setup_for))

    def fixture_set_up(self, fixture: Any) -> None:
        """A fixture's setup ended: what it changed is its own while it lives."""
        self._adopt(foreign=False)
        index = self._frame_index(fixture)
        if index is not None:
            self.frames[index].after = dict(self.baselines)

    def _frame_index(self, fixture: Any) -> int | None:
        """The latest open frame of ``fixture`` (a parametrized fixture may be set up again)."""
        if self.frames and self.frames[-1].fixture is fixture:  # the usual one: the frame opened last
            return len(self.frames) - 1
        return next((i for i in range(len(self.frames) - 1, -1, -1) if self.frames[i].fixture is fixture), None)

    def unframed_finished(self) -> None:
        """A fixture set up before any frame (the session was dormant then) ended: nobody knows what it changed."""
        self._ended_unchecked(self._live(), self.frames)

    def _ended_unchecked(self, specs: list[StateSpec], later: list[Frame]) -> None:
        """A fixture ended that nobody could check for ``specs`` (set up with no frame, or changed under it by a
        fixture started after it): what its teardown left is its clean-up, kept as the baseline, so the next test is
        neither blamed for it nor has it put back. Each live frame in ``later`` (started after it): one whose setup
        left an object alone found it as this fixture left it, and is checked against what is kept; one that changed
        it may hold this fixture's change too (an undo handle undone out of order hands its "before" on), so it
        cannot be checked for that object either."""
        for spec in specs:
            label = spec.label
            base = self.baselines.get(label)
            if base is None:
                continue
            if spec.changed(base):
                base = self.baselines[label] = spec.snapshot()
            for frame in later:
                if label in frame.after and frame.before.get(label) is frame.after[label]:
                    frame.before[label] = frame.after[label] = base
                else:
                    frame.before.pop(label, None)

    def fixture_finished(self, fixture: Any, unchanged: bool = False) -> FixtureEnd | None:
        """A fixture's teardown ended: restore what it left changed. None when it had no frame. ``unchanged``: no
        code ran since the last check (its teardown had none), so an object its setup left alone is not compared."""
        index = self._frame_index(fixture)
        if index is None:
            return None
        frame = self.frames.pop(index)
        later = self.frames[index:]  # started after it and still alive
        if unchanged and not later and frame.left_alone():  # the loop below would skip every object
            return FixtureEnd(frame.setup_for, [])
        changes: list[str] = []
        unchecked: list[StateSpec] = []
        baselines, before_of, after_of = self.baselines, frame.before.get, frame.after.get  # asked per object
        for spec in self._live():
            label = spec.label
            before, after = before_of(label), after_of(label)
            if before is None:
                unchecked.append(spec)
                continue
            if before is after:  # its setup left this object alone: so must its teardown
                if unchanged and not later:
                    continue
                expected = baselines.get(label, before)
            elif later and baselines.get(label) is not after:
                changes.extend(self._revert(spec, before, after))
                for alive in later:  # changed since by a fixture still alive: nobody can tell whose the rest is
                    alive.before.pop(label, None)
                self.settled = False
                continue
            else:
                expected = baselines[label] = before
                for alive in later:  # they found this object as the ended fixture left it, and did not change it
                    alive.before[label] = alive.after[label] = before
            if spec.changed(expected):
                changes.extend(self._put_back(spec, expected, self._describe(spec, expected)))
        if unchecked:
            self._ended_unchecked(unchecked, later)
        return FixtureEnd(frame.setup_for, changes)

    def _revert(self, spec: StateSpec, before: Any, after: Any) -> list[str]:
        """A fixture ended whose object was changed since by a fixture still alive: take out what its setup did
        that is still there untouched (a spec with ``revert``), and hold the result as the baseline."""
        if spec.revert is None or after is None:
            return []
        lines = [one_line(str(line)) for line in spec.revert(before, after)]
        if lines:
            self.baselines[spec.label] = spec.snapshot()
        return lines

