"""Random suites for the isolation contract: a model of a suite (fixtures of every scope, tests of every kind, the
project's runtest hooks), a Hypothesis strategy that draws one, and the files that write it.

Each unit changes a held object of its own (a list in ``genstate``, held through ``pytest_trtcap_isolated_state``
under the unit's name) by adding a token; it then puts it back itself, leaves it (a leak), or has it put back
later by another part that the contract accepts as its owner. Every clean-up is ``list.remove``, which raises where
the plugin already took the token away, and every test asserts that the tokens of the fixtures it uses are there:
a correct suite the plugin broke fails. ``isolation_oracle`` predicts what the run must report, apart from the
plugin's code.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

SCOPES = ("function", "class", "module", "session")
WIDER = ("class", "module", "session")


@dataclass
class Fixture:
    name: str
    scope: str
    undo: str  # "yield", "addfinalizer", "node" (request.node.addfinalizer), "leak", or the function-level
    #            owners that put it back for it: "body", "hook", "other" (another fixture's teardown)
    deps: list[str] = field(default_factory=list)  # arguments, all of the same or a wider scope
    autouse: bool = False
    params: int = 0  # indirect parametrization: the tests that use it run once per param
    gets: str = ""  # a fixture it takes with request.getfixturevalue in its setup
    late: str = ""  # a dependency whose ``request.addfinalizer`` its teardown calls, adding a leaking finalizer


@dataclass
class Test:
    name: str
    module: str
    kind: str  # "plain", "class" (a plain class) or "unittest"
    uses: list[str] = field(default_factory=list)  # arguments (plain and class tests)
    usefixtures: list[str] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)  # request.getfixturevalue in the body, after its own change
    body: str = ""  # "", "leak" or "clean": the body changes its own object
    params: int = 0  # direct parametrization
    cleans: list[str] = field(default_factory=list)  # function fixtures whose token the body puts back


@dataclass
class Suite:
    fixtures: list[Fixture]
    tests: list[Test]
    hook: str = ""  # "", "clean" (runtest_setup adds, runtest_teardown removes) or "leak" (setup only)
    setup_class: dict[str, str] = field(default_factory=dict)  # unittest class -> "clean" or "leak"

    def fixture(self, name: str) -> Fixture:
        return next(f for f in self.fixtures if f.name == name)

    def labels(self) -> list[str]:
        tests = [f"body_{t.module}_{t.name}" for t in self.tests if t.body]
        return ([f.name for f in self.fixtures] + tests + [f"setupclass_{c}" for c in self.setup_class]
                + (["hook"] if self.hook else []))


# --- drawing a suite -----------------------------------------------------------------------------------------


@st.composite
def suites(draw: st.DrawFn) -> Suite:
    fixtures: list[Fixture] = []
    for i in range(draw(st.integers(1, 6))):
        scope = draw(st.sampled_from(SCOPES))
        wider_or_same = [f.name for f in fixtures if SCOPES.index(f.scope) >= SCOPES.index(scope)]
        undo = draw(st.sampled_from(("yield", "addfinalizer", "node", "leak")
                                    + (("body", "hook", "other") if scope == "function" else ())))
        params = draw(st.sampled_from((0, 0, 2))) if scope == "function" and undo != "other" else 0
        gets = draw(st.sampled_from(["", *wider_or_same])) if wider_or_same else ""
        deps = draw(st.lists(st.sampled_from(wider_or_same), unique=True, max_size=2)) if wider_or_same else []
        late_from = [d for d in deps if d != gets]
        late = draw(st.sampled_from(["", *late_from])) if late_from and undo in ("yield", "leak") else ""
        fixtures.append(Fixture(f"fx{i}_{scope[0]}", scope, undo, [d for d in deps if d != gets],
                                draw(st.booleans()) and params == 0 and draw(st.booleans()), params, gets, late))
    _give_owners(fixtures)
    for f in fixtures:  # getfixturevalue cannot take a parametrized fixture
        f.gets = f.gets if f.gets and not _parametrized(fixtures, f.gets) else ""
    for f in fixtures:  # unittest tests get autouse fixtures too, and cannot run a parametrized one
        f.autouse = f.autouse and not _parametrized(fixtures, f.name)
    names = [f.name for f in fixtures]
    tests, setup_class = [], {}
    for m in range(draw(st.integers(1, 2))):
        for j in range(draw(st.integers(1, 4))):
            kind = draw(st.sampled_from(("plain", "plain", "class", "unittest")))
            test = Test(f"test_{j}", f"test_m{m}", kind, body=draw(st.sampled_from(("", "", "leak", "clean"))))
            if kind != "unittest":
                test.uses = draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
                test.gets = [n for n in draw(st.lists(st.sampled_from(names), unique=True, max_size=1))
                             if not _parametrized(fixtures, n)]
                test.params = draw(st.sampled_from((0, 0, 2)))
            test.usefixtures = draw(st.lists(st.sampled_from(names), unique=True, max_size=1))
            if kind == "unittest":
                test.usefixtures = [n for n in test.usefixtures if not _parametrized(fixtures, n)]
                setup_class.setdefault(f"Test{test.module}{test.name}", draw(st.sampled_from(("clean", "leak"))))
            tests.append(test)
    suite = Suite(fixtures, tests, draw(st.sampled_from(("", "", "clean", "leak"))), setup_class)
    _body_cleans(suite)
    return suite


def _fixture(fixtures: list[Fixture], name: str) -> Fixture:
    return next(f for f in fixtures if f.name == name)


def _parametrized(fixtures: list[Fixture], name: str) -> bool:
    """Whether ``name`` or anything it sets up is parametrized."""
    f = _fixture(fixtures, name)
    below = [*f.deps, *([f.gets] if f.gets else [])]
    return f.params > 0 or any(_parametrized(fixtures, n) for n in below)


def _give_owners(fixtures: list[Fixture]) -> None:
    """A function fixture put back by "other" needs another function fixture that depends on it (its teardown
    runs first and puts the token back); where there is none, it puts it back itself."""
    for f in fixtures:
        if f.undo == "other" and not any(f.name in g.deps and g.scope == "function" for g in fixtures):
            f.undo = "yield"


def _body_cleans(suite: Suite) -> None:
    """A function fixture put back by "body" is put back by each test body that takes it (by argument or by
    getfixturevalue); where a test reaches it otherwise, it leaks there."""
    for test in suite.tests:
        test.cleans = [n for n in direct_uses(suite, test) if suite.fixture(n).undo == "body"]


def direct_uses(suite: Suite, test: Test) -> list[str]:
    """The fixtures a test's body takes by argument or by getfixturevalue (before the body's clean-up)."""
    return list(dict.fromkeys([*test.uses, *test.gets]))


def closure(suite: Suite, test: Test) -> list[str]:
    """Every fixture a test sets up, with their dependencies (arguments, getfixturevalue, autouse)."""
    todo = [*test.uses, *test.usefixtures, *test.gets, *(f.name for f in suite.fixtures if f.autouse)]
    seen: list[str] = []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        f = suite.fixture(name)
        todo += [*f.deps, *([f.gets] if f.gets else []), *([f.late] if f.late else [])]
    return seen


# --- writing it -------------------------------------------------------------------------------------------------


def write(suite: Suite, where: Path) -> None:
    (where / "genstate.py").write_text("HELD = {}\n")
    (where / "conftest.py").write_text(_conftest(suite))
    for module in sorted({t.module for t in suite.tests}):
        (where / f"{module}.py").write_text(_module(suite, [t for t in suite.tests if t.module == module]))


def _conftest(suite: Suite) -> str:
    lines = ["import pytest", "from genstate import HELD", "",
             f"for _label in {suite.labels()!r}:", "    HELD[_label] = []", "",
             "def pytest_trtcap_isolated_state(config):",
             "    return [(label, (lambda held=held: list(held)),",
             "             (lambda snap, held=held: held.__setitem__(slice(None), snap)))",
             "            for label, held in HELD.items()]", ""]
    if suite.hook:
        lines += ["def pytest_runtest_setup(item):", "    HELD['hook'].append('x')", ""]
    by_hook = [f.name for f in suite.fixtures if f.undo == "hook"]
    if suite.hook == "clean" or by_hook:
        lines += ["def pytest_runtest_teardown(item):"]
        lines += ["    HELD['hook'].remove('x')"] if suite.hook == "clean" else []
        lines += [f"    if 'x' in HELD[{n!r}]: HELD[{n!r}].remove('x')" for n in by_hook] + [""]
    for f in suite.fixtures:
        lines += _fixture_source(suite, f)
    return "\n".join(lines) + "\n"


def _fixture_source(suite: Suite, f: Fixture) -> list[str]:
    deco = [f"scope={f.scope!r}"] + (["autouse=True"] if f.autouse else []) + (
        [f"params={list(range(f.params))!r}"] if f.params else [])
    body = [f"HELD[{f.name!r}].append('x')", *(f"assert 'x' in HELD[{d!r}]" for d in f.deps)]
    if f.gets:
        body += [f"request.getfixturevalue({f.gets!r})", f"assert 'x' in HELD[{f.gets!r}]"]
    undo = f"HELD[{f.name!r}].remove('x')"
    if f.undo == "addfinalizer":
        body.append(f"request.addfinalizer(lambda: {undo})")
    elif f.undo == "node":
        body.append(f"request.node.addfinalizer(lambda: {undo})")
    teardown = [undo] if f.undo == "yield" else []
    teardown += [f"if 'x' in HELD[{g.name!r}]: HELD[{g.name!r}].remove('x')" for g in suite.fixtures
                 if g.undo == "other" and g.name in f.deps and f.scope == "function"]
    if f.late:  # a finalizer added to a dependency after this test's own code ran: it runs at that one's end
        teardown.append(f"{f.late}[0](lambda: HELD[{f.name!r}].append('late'))")
    handle = "[request.addfinalizer]" if any(g.late == f.name for g in suite.fixtures) else "None"
    return [f"@pytest.fixture({', '.join(deco)})", f"def {f.name}({', '.join(['request', *f.deps])}):",
            *(f"    {line}" for line in body), f"    yield {handle}", *(f"    {line}" for line in teardown), ""]


def _module(suite: Suite, tests: list[Test]) -> str:
    lines = ["import unittest", "import pytest", "from genstate import HELD", ""]
    for test in tests:
        lines += _test_source(suite, test)
    return "\n".join(lines) + "\n"


def _test_source(suite: Suite, test: Test) -> list[str]:
    label = f"body_{test.module}_{test.name}"
    checks = [f"assert 'x' in HELD[{n!r}]" for n in [*test.uses, *test.usefixtures]]
    body = list(checks)
    if test.body:
        body.append(f"HELD[{label!r}].append('x')")
    body += [line for n in test.gets for line in (f"request.getfixturevalue({n!r})", f"assert 'x' in HELD[{n!r}]")]
    body += [f"HELD[{n!r}].remove('x')" for n in test.cleans]
    if test.body == "clean":
        body.append(f"HELD[{label!r}].remove('x')")
    body = body or ["pass"]
    marks = [f"@pytest.mark.usefixtures({', '.join(map(repr, test.usefixtures))})"] if test.usefixtures else []
    if test.kind == "unittest":
        cls = f"Test{test.module}{test.name}"
        setup = f"setupclass_{cls}"
        undo = [f"        HELD[{setup!r}].remove('x')"] if suite.setup_class[cls] == "clean" else ["        pass"]
        return [*marks, f"class {cls}(unittest.TestCase):", "    @classmethod", "    def setUpClass(cls):",
                f"        HELD[{setup!r}].append('x')", "    @classmethod", "    def tearDownClass(cls):", *undo,
                "    def test_it(self):", f"        assert 'x' in HELD[{setup!r}]",
                *[f"        {line}" for line in body if "request" not in line], ""]
    params = ["@pytest.mark.parametrize('p', [0, 1])"] if test.params else []
    args = ", ".join(["request", *(["p"] if test.params else []), *test.uses])
    if test.kind == "class":
        return [f"class Test{test.name.title().replace('_', '')}:", *[f"    {m}" for m in [*marks, *params]],
                f"    def test_it(self, {args}):", *[f"        {line}" for line in body], ""]
    return [*marks, *params, f"def {test.name}({args}):", *[f"    {line}" for line in body], ""]


def source(suite: Suite) -> str:
    """The whole suite as one text, for a failing example's report."""
    return textwrap.indent(_conftest(suite) + "".join(_module(suite, [t for t in suite.tests if t.module == m])
                                                     for m in sorted({t.module for t in suite.tests})), "  ")
