"""The isolation contract, driven by pytest's public hooks (the rule itself is ``ledger``'s).

* A test is one unit with everything that ends with it: from the start of its setup to the end of its own
  teardown (its body, its function-scoped fixtures, every finalizer added to its node or to those fixtures, and the
  project's ``pytest_runtest_setup``/``pytest_runtest_teardown`` hooks). Its end is the start of the first teardown
  of a wider fixture in its teardown, or else the end of its teardown.
* A fixture of a wider scope is a unit from the start of its setup to its ``pytest_fixture_post_finalizer``; it
  owns what its setup and its teardown change. Where its teardown is part of a test's, what the finalizers that
  pytest runs after it (``request.node.addfinalizer``) put back is its clean-up: it is judged when the test's
  teardown ends.
* What changes outside every test (a test module registering a converter as it is collected, another plugin's
  hook) belongs to no unit: it becomes the baseline (and a later test that puts it back is cleaning up).

The hooks read only what pytest hands them (the item, the fixture's ``argname``, ``scope`` and ``addfinalizer``),
so pytest calling ``pytest_fixture_post_finalizer`` once (9.1 on) or again through a dependent's end (before 9.1)
changes nothing: a fixture's end is seen once, the first time, and any later call finds no live unit.

PYTEST_DONT_REWRITE: loaded in every pytest run (isolation acts in every session); no assert to rewrite.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator
from typing import Any

import pytest

from ..options import NO_ISOLATION, SPECS
from . import fixture_subject
from .ledger import Leak, Ledger, StateSpec, Unit

_ENVIRONMENT = tuple(spec.env for spec in SPECS)


def environment_spec() -> StateSpec:
    """The settings' environment variables: the guards read ``TRTCAP_TARGET_SM`` whenever they decide. A snapshot
    is the raw values in ``os.environ``'s own dict where CPython keeps one (``os.environ.get`` costs ten times as
    much, and this is compared twice per test), else the values ``get`` returns."""
    data, encode = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", None)
    decode = getattr(os.environ, "decodevalue", lambda value: value)
    if isinstance(data, dict) and callable(encode):
        keys = [encode(name) for name in _ENVIRONMENT]

        def snapshot() -> tuple:
            return tuple(map(data.get, keys))
    else:  # pragma: no cover - an interpreter whose os.environ keeps no such dict
        decode = str

        def snapshot() -> tuple:
            return tuple([os.environ.get(name) for name in _ENVIRONMENT])

    def value(raw: Any) -> str | None:
        return None if raw is None else decode(raw)

    def restore(snap: tuple) -> None:
        for name, raw in zip(_ENVIRONMENT, snap):
            if raw is None:
                os.environ.pop(name, None)
            elif os.environ.get(name) != value(raw):
                os.environ[name] = decode(raw)

    def describe(snap: tuple) -> list[str]:
        out = []
        for name, was, now in zip(_ENVIRONMENT, map(value, snap), map(value, snapshot())):
            if now != was:
                out.append(f"environment {name} unset, was {was!r}" if now is None else
                           f"environment {name}={now!r}, was {'unset' if was is None else repr(was)}")
        return out

    return StateSpec("environment", snapshot, restore, lambda snap: snapshot() != snap, describe)


def _outside() -> Unit:
    return Unit("outside any test or fixture", "outside", adopt=True)


class IsolationDrive:
    """Per-config hooks: which unit runs now, its boundaries, and the leaks found, handed to ``deliver``."""

    def __init__(self, deliver: Callable[..., Any]) -> None:
        self.ledger = Ledger([environment_spec()])
        self.deliver = deliver
        self.item: pytest.Item | None = None
        self.phase = ""
        self.test: Unit | None = None
        self.running: list[Unit] = []  # whose code runs now: the test (or its node unit), then fixtures in setup
        self.frames: dict[Any, tuple[Unit, str]] = {}  # alive wider-scoped fixture -> its unit, set up for
        self.found: list[Leak] = []  # leaks found since the current test began, reported at its teardown's end
        self.done_added = False  # the test's own end is a finalizer on its node (``_watch_end``)
        self.ended_here: list[Unit] = []  # wider fixtures that ended in the current teardown
        self.full = False  # the built-in specs are held (Torch-TensorRT imported, or the guards changed)
        self.reported: set[str] = set()  # labels of the project's entries whose failure was reported
        self.user_specs: list[StateSpec] = []  # the project's entries (``pytest_trtcap_isolated_state``)

    # --- what is held -------------------------------------------------------------------------------------------

    def hold_builtins(self, list_all: bool = False) -> None:
        """Hold Torch-TensorRT's registries and the guards' state from now on (called before the guards' first
        change, so their state as it was is the baseline)."""
        if self.full:
            return
        self.full = True
        from .held_state import builtin_specs

        for spec in builtin_specs(list_all=list_all):
            self.ledger.add(spec)

    def hold(self, spec: StateSpec) -> None:
        self.ledger.add(spec)
        self.user_specs.append(spec)

    def torch_tensorrt_imported(self, list_all: bool = False) -> None:
        self.hold_builtins(list_all)
        self.ledger.see_new()

    def take_failures(self) -> list[str]:
        """The errors of the project's entries that failed since the last call, each once."""
        new = [spec for spec in self.user_specs if spec.failure and spec.label not in self.reported]
        self.reported.update(spec.label for spec in new)
        return [spec.failure for spec in new]

    # --- tests --------------------------------------------------------------------------------------------------

    def _owner(self) -> Unit:
        if not self.running:
            self.running.append(_outside())
        return self.running[-1]

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, Any]:
        outside = self.running[0] if self.running else _outside()
        self.ledger.boundary(outside)
        self.found += self.ledger.end(outside)
        self.item, self.phase, self.done_added, self.ended_here = item, "setup", False, []
        self.test = Unit(item.nodeid, "test", adopt=item.get_closest_marker(NO_ISOLATION) is not None)
        self.running = [self.test]
        return (yield)

    def _watch_end(self) -> None:
        """Mark the end of the test's own finalizers with one of ours, run after them (pytest runs a node's
        finalizers last in, first out): added before the first fixture's, or when its body starts where its setup
        set up no fixture (so before any its body adds)."""
        if not self.done_added and self.item is not None:
            self.done_added = True
            self.item.addfinalizer(self._end_test)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:  # noqa: ARG002
        self._watch_end()
        self.phase = "call"
        return (yield)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
        __tracebackhide__ = True  # a leak's error (``--trtcap-strict``) shows the test, not this plugin
        self.phase = "teardown"
        # the next test shares every node above this one: pytest tears down this test alone, so nothing runs after
        # its own finalizers (the usual case, spared a comparison); not under --pdb, where unittest postpones tearDown
        alone = nextitem is not None and nextitem.parent is item.parent and not item.config.option.usepdb
        try:
            result = yield
        except BaseException:
            self._close(alone)
            self.deliver(item, self._take(), teardown_failed=True)
            raise
        self._close(alone)
        self.deliver(item, self._take())
        return result

    def _take(self) -> list[Leak]:
        """The leaks found since the last call, one per subject (a test that left two objects changed is one)."""
        merged: dict[str, Leak] = {}
        for leak in self.found:
            if leak.subject in merged:
                merged[leak.subject].lines.extend(leak.lines)
            else:
                merged[leak.subject] = Leak(list(leak.owners), list(leak.lines))
        self.found = []
        return list(merged.values())

    def _end_test(self) -> None:
        """The test's own code has all run: judge it; what runs after it in its teardown are wider nodes' ends."""
        test = self.test
        if test is None or not test.alive:
            return
        self.ledger.boundary(self._owner())
        self.found += self.ledger.end(test)
        self.running = [Unit(f"{test.subject} (finalizers run in its teardown)", "node")]

    def _close(self, alone: bool = False) -> None:
        """The test's teardown ended: judge the test if its own end was not seen, then what was left to the
        finalizers that ran after it (wider fixtures' ends; none where the test was torn down ``alone``)."""
        self._end_test()
        node = self.running[0] if self.running else None
        if node is not None and not (alone and not self.ended_here and len(self.running) == 1):
            self.ledger.boundary(node)
            for leak in self.ledger.end(node):  # a finalizer of a wider node ran as those fixtures ended
                if node in leak.owners and self.ended_here:
                    leak.owners = list(dict.fromkeys([*(u for u in leak.owners if u is not node), *self.ended_here]))
                self.found.append(leak)
        self.item, self.test, self.phase, self.running = None, None, "", []

    # --- fixtures of a wider scope ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_fixture_setup(self, fixturedef: Any) -> Generator[None, Any, Any]:
        if self.phase == "setup":
            self._watch_end()
        if fixturedef.scope == "function":
            return (yield)
        unit = Unit("", "fixture")
        self.ledger.boundary(self._owner())
        self.running.append(unit)
        try:
            return (yield)
        finally:
            self.ledger.boundary(unit)
            if unit in self.running:
                self.running.remove(unit)
            self.frames[fixturedef] = (unit, self.item.nodeid if self.item is not None else "")
            fixturedef.addfinalizer(functools.partial(self._teardown_begins, fixturedef))

    def _teardown_begins(self, fixturedef: Any) -> None:
        """Its teardown starts: this finalizer was added after its setup, so it runs before the ones its setup
        added (not before one added to it later: that one runs in whoever's turn came before)."""
        unit = self.frames.get(fixturedef, (None, ""))[0]
        if unit is None:
            return
        self.ledger.boundary(self._owner())
        self.running.append(unit)

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        unit, setup_for = self.frames.pop(fixturedef, (None, ""))
        if unit is None:  # never set up here, or its end was seen already
            return
        self.ledger.boundary(unit)
        if unit in self.running:
            self.running.remove(unit)
        current = self.item.nodeid if self.item is not None else ""
        unit.subject = fixture_subject(fixturedef.argname, fixturedef.scope, current or setup_for, setup_for)
        waiting = self.running[0] if self.phase == "teardown" and self.running else None  # the test or its node
        if waiting is not None:
            self.ended_here.append(unit)
        self.found += self.ledger.end(unit, defer_to=waiting)
        if self.item is None:  # torn down outside any test (an interrupted session's end)
            self.deliver(None, self._take())

    def pytest_sessionfinish(self) -> None:
        """An interrupted test (KeyboardInterrupt, ``pytest.exit``) never reached its teardown's end."""
        if self.item is not None:
            item = self.item
            self._close()
            self.deliver(item, self._take(), interrupted=True)

