"""What pytest will run around a test, read from its own lists (private to pytest, read defensively): which fixture
ends run no project code, where a check placed in a test's node finalizers runs right after its last fixture's end,
and which fixtures are pytest's own for a parametrized argument. The session asks these at every test, so each
stays a walk of short lists with no import or allocation beyond its answer."""

from __future__ import annotations

import functools
from typing import Any

from _pytest.fixtures import FixtureDef  # loaded by pytest already

_EXECUTE_LAMBDA: list[Any] = []  # the code of pytest's own lambda finalizer, once recognised (all share it)


def _pytests_own(finalizer: Any, finish: Any) -> bool:
    """One of pytest's own finalizers on a fixture: ending a fixture that depends on it (checked at its own end),
    or calling ``pytest_fixture_post_finalizer`` (where its end is checked). Asked for every finalizer of every
    fixture of a test, so the lambda is recognised by name once and by its code object after that."""
    if isinstance(finalizer, functools.partial):
        return getattr(finalizer.func, "__func__", None) is finish
    code = getattr(finalizer, "__code__", None)
    if code is None:
        return False
    if _EXECUTE_LAMBDA and code is _EXECUTE_LAMBDA[0]:
        return True
    if (getattr(finalizer, "__module__", None) == "_pytest.fixtures"
            and getattr(finalizer, "__qualname__", None) == "FixtureDef.execute.<locals>.<lambda>"):
        _EXECUTE_LAMBDA[:] = [code]
        return True
    return False


def node_finalizers(item: Any) -> list[Any]:
    """The list pytest runs the test's node finalizers from (taken when its body starts; the teardown pops it), or
    an empty one where pytest keeps them in another way."""
    stack = getattr(getattr(item.session, "_setupstate", None), "stack", None)
    entry = stack.get(item) if isinstance(stack, dict) else None
    return entry[0] if isinstance(entry, tuple) and entry and isinstance(entry[0], list) else []


def after_fixture_ends(finalizers: list[Any]) -> int:
    """Where in pytest's list of a test's node finalizers a check runs right after the last fixture's end (they run
    from the end of the list): after the last fixture's ``finish``, else after the node's own teardown (index 0)."""
    ends = [i for i, f in enumerate(finalizers) if _pytests_own(f, FixtureDef.finish)]
    return ends[-1] + 1 if ends else 1


def quiet_ends(finalizers: list[Any], framed: set[int]) -> set[int]:
    """id() of the fixtures whose end needs no comparison: called when the test's own check has run, it reads the
    finalizers left on the test's node in the order they will run; a fixture whose own finalizers are all pytest's
    (no ``yield``, no ``addfinalizer``) runs no code when it ends, so while nothing else ran since the last check
    the state is still the checked one. Any other finalizer ends that run. Where pytest keeps them in another way,
    every fixture's end is compared."""
    finish = FixtureDef.finish
    quiet: set[int] = set()
    fresh = True
    for finalizer in reversed(finalizers):
        fixture = getattr(getattr(finalizer, "func", None), "__self__", None)
        if not (isinstance(fixture, FixtureDef) and _pytests_own(finalizer, finish)):
            fresh = False  # the project's code: whatever it changes is found at the next fixture's end
            continue
        own = getattr(fixture, "_finalizers", None)
        if fresh and isinstance(own, list) and all([_pytests_own(f, finish) for f in own]):
            quiet.add(id(fixture))
        else:
            fresh = id(fixture) in framed  # its end is compared after its code ran
    return quiet


def pytests_own_argument(fixturedef: Any) -> bool:
    """The fixture pytest makes for a directly parametrized argument: it returns ``request.param`` and runs no code
    that could change held state, so it gets no frame (a frame costs a comparison of every held object at its setup
    and again at its teardown, per argument of every parametrized test)."""
    func = fixturedef.func
    return getattr(func, "__name__", "") == "get_direct_param_fixture_func" and str(
        getattr(func, "__module__", "")).startswith("_pytest.")
