"""The isolation contract as a model of a generated suite (``generated_suites``), written apart from the plugin:
which units must be named as leaking, with which held object, and how every test must end.

The contract (docs/plugin.md, "Isolation"): a test is judged with everything that ends with it (its body, its
function-scoped fixtures, the finalizers added to its node or to them, the project's runtest hooks), a fixture of a
wider scope when it ends (with the finalizers added to its node); state put back by then is no leak, whoever put it
back; nothing alive is touched, so a correct suite passes.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from generated_suites import Fixture, Suite, Test, closure

_FIXTURE = re.compile(
    r"^\S+ \((?:fixture '(?P<name>\w+)'|(?P<cls>\w+)\.setUpClass/tearDownClass), (?P<scope>\w+) scope")


class Named(NamedTuple):
    """One leak line's unit and held object: ("test", nodeid, label) or ("fixture", name, label)."""

    kind: str
    who: str
    label: str


def instances(test: Test, nodeids: list[str]) -> list[str]:
    """The collected node ids of a modelled test (one per parametrization)."""
    base = f"{test.module}.py::" + {"plain": test.name, "class": f"TestTest{test.name[5:]}::test_it",
                                    "unittest": f"Test{test.module}{test.name}::test_it"}[test.kind]
    return [n for n in nodeids if n == base or n.startswith(base + "[")]


def _leaks_in_test(suite: Suite, test: Test) -> list[str]:
    """The held objects a test (with its function-scoped fixtures) leaves changed."""
    used = closure(suite, test)
    functions = [suite.fixture(n) for n in used if suite.fixture(n).scope == "function"]
    leaked = [f.name for f in functions if _leaks(suite, f, test, used)]
    leaked += [n for n in used if suite.fixture(n).late and ends_with(suite.fixture(suite.fixture(n).late), test)]
    if test.body == "leak":
        leaked.append(f"body_{test.module}_{test.name}")
    if suite.hook == "leak":
        leaked.append("hook")
    return leaked


def ends_with(f: Fixture, test: Test) -> bool:
    """Whether ``f`` ends with ``test``'s own finalizers: a function-scoped one, and a class-scoped one that a test
    outside any class uses (pytest keeps it on the test itself)."""
    return f.scope == "function" or (f.scope == "class" and test.kind == "plain")


def _leaks(suite: Suite, f: Fixture, test: Test, used: list[str]) -> bool:
    if f.undo == "leak":
        return True
    if f.undo == "body":
        return f.name not in test.cleans
    if f.undo == "other":
        return not any(g.scope == "function" and f.name in g.deps and g.name in used for g in suite.fixtures)
    return False  # its own teardown, its own finalizer, the test node's finalizer, or the runtest hook


def expected(suite: Suite, nodeids: list[str]) -> set[Named]:
    """Every leak line the run must print, as (kind, who, label)."""
    out: set[Named] = set()
    used_anywhere: set[str] = set()
    for test in suite.tests:
        ids = instances(test, nodeids)
        if ids:
            used_anywhere.update(closure(suite, test))
        out |= {Named("test", nodeid, label) for nodeid in ids for label in _leaks_in_test(suite, test)}
    for f in suite.fixtures:
        if f.scope != "function" and f.undo == "leak" and f.name in used_anywhere:
            out.add(Named("fixture", f.name, f.name))
    for test in suite.tests:
        late = [f for f in suite.fixtures if f.late and f.name in closure(suite, test)]
        out |= {Named("fixture", f.late, f.name) for f in late
                if not ends_with(suite.fixture(f.late), test) and instances(test, nodeids)}
    for test in suite.tests:
        cls = f"Test{test.module}{test.name}"
        if test.kind == "unittest" and suite.setup_class.get(cls) == "leak" and instances(test, nodeids):
            out.add(Named("fixture", cls, f"setupclass_{cls}"))
    return out


def _unit(subject: str) -> tuple[str, str] | None:
    match = _FIXTURE.match(subject)
    if match:
        return "fixture", match["name"] or match["cls"]
    if re.fullmatch(r"test_m\d\.py::\S+", subject):
        return "test", subject
    return None


def reported(summary: list[str], want: set[Named]) -> tuple[set[Named], list[str]]:
    """What the run's ``trtcap`` section named, and the lines this model cannot accept. A line naming several units
    ("... or ...": values could not tell them apart) stands for each of them that ``want`` expects; it may name
    wider fixtures that put their own changes back (they ended together), never a test that did."""
    found: set[Named] = set()
    unreadable = []
    for line in summary:
        if not line.startswith("  ") or " -> " not in line:
            continue
        subject, _, what = line.strip().partition(" -> ")
        units = [_unit(part) for part in subject.split(" or ")]
        if None in units:
            unreadable.append(line)
            continue
        for label in (part.removesuffix(" changed") for part in what.split("; ")):
            named = [Named(kind, who, label) for kind, who in units]  # type: ignore[misc]
            hits = [n for n in named if n in want]
            if len(named) > 1 and any(n.kind == "test" and n not in want for n in named):
                unreadable.append(line)
            found |= set(hits or named[:1])
    return found, unreadable
