"""Fixtures of wider scopes that change the guards' state and undo it, nested in one another, as a suite sees it.

Each suite's tests assert the targets they find (so a wrong baseline, or a stale one put back, fails them), and its
conftest prints the guards' state once every fixture has ended. Each runs twice: with nothing given, so the first
declaration (inside a session fixture's setup) wakes the dormant session, and with ``--trtcap-strict``, active from
the start, under which a false leak would be an error. Nothing here leaks: no warning, no summary line.
"""

from __future__ import annotations

from typing import Dict, Tuple

import pytest

RUN = ("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")
MODES = [
    pytest.param((), id="woken by the first declaration"),
    pytest.param(("--trtcap-strict",), id="strict"),
    pytest.param(("-W", "error"), id="warnings are errors"),
    pytest.param(("-n", "2", "--dist", "loadfile"), id="xdist"),
]

FINAL_STATE = '''
import trtcap_guards as guards


def origin():
    return guards.capability_decision(probe_host=False).origin


def pytest_terminal_summary(terminalreporter):
    """After every fixture's teardown: the guards must be as they started."""
    from trtcap_guards import state

    now = state.state_snapshot(fired=False)
    terminalreporter.write_line(f"guards at the end: {'as they started' if now == state.initial_state() else now}")
'''

SESSION = '''
import pytest

@pytest.fixture(scope="session")
def sess():
    with guards.declare_targets("8.9", origin="session"):
        yield
'''

SESSION_BY_HANDLE = '''
import pytest

@pytest.fixture(scope="session")
def sess():
    declared = guards.declare_targets("8.9", origin="session")
    yield
    declared.undo()
'''

#: name -> (files, tests that pass)
SUITES: Dict[str, Tuple[Dict[str, str], int]] = {
    "class fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_z.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="class")
def cls_fix():
    with guards.declare_targets("7.5", origin="class"):
        yield

class TestA:
    def test_in(self, sess, cls_fix):
        assert origin() == "class"

def test_end(sess):
    assert origin() == "session"

def test_last():
    assert origin() == "session"
"""}, 3),
    "module fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_a.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_in(sess, mod):
    assert origin() == "module"
""", "test_b.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session"

def test_last():
    assert origin() == "session"
"""}, 3),
    "package fixture inside a session fixture, undone by handles": ({
        "conftest.py": FINAL_STATE + SESSION_BY_HANDLE,
        "pkg1/__init__.py": "",
        "pkg1/conftest.py": """
import pytest
from conftest import guards

@pytest.fixture(scope="package")
def pkg():
    declared = guards.declare_targets("7.5", origin="package")
    yield
    declared.undo()
""",
        "pkg1/test_x.py": """
from conftest import origin

def test_x(sess, pkg):
    assert origin() == "package"
""",
        "pkg2/__init__.py": "",
        "pkg2/test_y.py": """
from conftest import origin

def test_y(sess):
    assert origin() == "session"

def test_y2():
    assert origin() == "session"
"""}, 3),
    "class in module in session, undone by handles": ({"conftest.py": FINAL_STATE + SESSION_BY_HANDLE, "test_h.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod(sess):
    declared = guards.declare_targets("7.5", origin="module")
    yield
    declared.undo()

@pytest.fixture(scope="class")
def cls_fix():
    declared = guards.declare_targets("8.6", origin="class")
    yield
    declared.undo()

class TestA:
    def test_in(self, mod, cls_fix):
        assert origin() == "class"

def test_mod(mod):
    assert origin() == "module"
""", "test_i.py": """
from conftest import origin

def test_after(sess):
    assert origin() == "session"
"""}, 3),
    "parametrized class fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_p.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="class", params=["7.5", "8.6"])
def target(request, sess):
    with guards.declare_targets(request.param, origin="class " + request.param):
        yield request.param

class TestP:
    def test_one(self, target):
        assert origin() == "class " + target

    def test_two(self, target):
        assert origin() == "class " + target

def test_end(sess):
    assert origin() == "session"
"""}, 5),
    "parametrized module fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_q.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module", params=["7.5", "8.6"])
def target(request):
    declared = guards.declare_targets(request.param, origin="module " + request.param)
    yield request.param
    declared.undo()

def test_one(sess, target):
    assert origin() == "module " + target

def test_two(target):
    assert origin() == "module " + target
""", "test_r.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session"
"""}, 5),
    "module fixture inside a parametrized session fixture": ({"conftest.py": FINAL_STATE + """
import pytest

@pytest.fixture(scope="session", params=["8.9", "8.6"])
def sess(request):
    with guards.declare_targets(request.param, origin="session " + request.param):
        yield request.param
""", "test_a.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod(sess):
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_in(mod):
    assert origin() == "module"

def test_beside(sess):
    assert origin() == "module"
""", "test_b.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session " + sess
"""}, 6),
    "session fixture first requested while a module fixture is alive": ({"conftest.py": FINAL_STATE + SESSION,
                                                                         "test_m.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_a(mod):
    assert origin() == "module"

def test_b(mod, sess):
    assert origin() == "session"
""", "test_n.py": """
from conftest import origin

def test_c(sess):
    assert origin() == "session"
"""}, 3),
    "unittest setUpClass inside autouse fixtures of every scope": ({"conftest.py": FINAL_STATE + """
import pytest

@pytest.fixture(scope="session", autouse=True)
def sess():
    with guards.declare_targets("8.9", origin="session"):
        yield
""", "test_u.py": """
import unittest
from conftest import guards, origin

class TestU(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.declared = guards.declare_targets("8.6", origin="setUpClass")

    @classmethod
    def tearDownClass(cls):
        cls.declared.undo()

    def test_a(self):
        self.assertEqual(origin(), "setUpClass")

    def test_b(self):
        with guards.declare_targets("7.5", origin="body"):
            pass
        self.assertEqual(origin(), "setUpClass")

class TestV(unittest.TestCase):
    def test_c(self):
        self.assertEqual(origin(), "session")
""", "test_v.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module", autouse=True)
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

class TestC:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def cls_fix(cls):
        with guards.declare_targets("8.0", origin="class"):
            yield

    @pytest.fixture(autouse=True)
    def fn(self):
        with guards.declare_targets("8.6", origin="function"):
            yield

    def test_in_class(self):
        assert origin() == "function"

def test_in_module():
    assert origin() == "module"
""", "test_w.py": """
from conftest import origin

def test_after():
    assert origin() == "session"
"""}, 6),
}


def run(pytester: pytest.Pytester, files: Dict[str, str], *flags: str) -> pytest.RunResult:
    for path, text in files.items():
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return pytester.runpytest_subprocess(*RUN, *flags)


def assert_no_leak(result: pytest.RunResult) -> None:
    out = result.stdout.str()
    assert "leaked" not in out and "leaks:" not in out, out
    result.stdout.fnmatch_lines(["guards at the end: as they started"])


@pytest.mark.parametrize("flags", MODES)
@pytest.mark.parametrize("suite", sorted(SUITES))
def test_nested_wider_fixtures_that_undo_their_declarations_leak_nothing(
        pytester: pytest.Pytester, suite: str, flags: tuple) -> None:
    """Each fixture's declaration is the baseline while it lives; when it ends, the one around it is again."""
    files, passed = SUITES[suite]
    result = run(pytester, files, *flags)
    result.assert_outcomes(passed=passed)
    assert_no_leak(result)


RAISES_IN_TEARDOWN = {"conftest.py": FINAL_STATE + SESSION, "test_r.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def undoes_then_raises(sess):
    with guards.declare_targets("7.5", origin="module"):
        yield
    raise RuntimeError("teardown fails after its undo")

def test_a(undoes_then_raises):
    assert origin() == "module"
""", "test_s.py": """
from conftest import origin

def test_b(sess):
    assert origin() == "session"

def test_c():
    assert origin() == "session"
"""}


@pytest.mark.parametrize("flags", MODES[:2])
def test_a_wider_fixture_that_undoes_then_fails_in_teardown_errors_for_that_alone(
        pytester: pytest.Pytester, flags: tuple) -> None:
    result = run(pytester, RAISES_IN_TEARDOWN, *flags)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["ERROR test_r.py::test_a - RuntimeError: teardown fails after its undo"])
    assert_no_leak(result)


GENUINE_LEAKS = {"conftest.py": FINAL_STATE + SESSION, "test_l.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="class")
def cls_fix():
    with guards.declare_targets("7.5", origin="class"):
        yield

@pytest.fixture(scope="module")
def never_undone(sess):
    guards.declare_targets("8.0", origin="module fixture")
    yield
    raise RuntimeError("teardown fails before its undo")

class TestA:
    def test_leaks(self, sess, cls_fix):
        guards.declare_targets("8.6", origin="leaky body")

    def test_sees_class(self, cls_fix):
        assert origin() == "class"

def test_mod(never_undone):
    assert origin() == "module fixture"
""", "test_m.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session"
"""}
LEAKED = [
    "  test_l.py::TestA::test_leaks -> guards: declared targets 8.6 (from leaky body), were 7.5 (from class)",
    "  test_l.py::test_mod (fixture 'never_undone', module scope) -> "
    "guards: declared targets 8.0 (from module fixture), were 8.9 (from session)",
]


@pytest.mark.parametrize("flags, errors", [((), 1), (("--trtcap-strict",), 2)], ids=["woken", "strict"])
def test_a_body_and_a_wider_fixture_that_leak_inside_wider_fixtures_are_named_and_undone(
        pytester: pytest.Pytester, flags: tuple, errors: int) -> None:
    """Among fixtures that clean up, a real leak is still its leaker's: named, restored, and no later test's."""
    result = run(pytester, GENUINE_LEAKS, *flags)
    result.assert_outcomes(passed=4, errors=errors)
    result.stdout.fnmatch_lines(["leaks: 2 test(s) left global state changed (restored)", *sorted(LEAKED)])
    result.stdout.fnmatch_lines(["guards at the end: as they started"])


REPEATS_A_WOKEN_FIXTURE = {"conftest.py": FINAL_STATE, "test_d1.py": """
import pytest
from conftest import guards

@pytest.fixture(scope="module")
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_1(mod):
    pass
""", "test_d2.py": """
from conftest import guards, origin

def test_repeats_it_and_leaks():
    guards.declare_targets("7.5", origin="module")

def test_after():
    assert origin() != "module"
"""}


def test_repeating_exactly_what_a_fixture_that_woke_the_session_declared_is_still_a_leak(
        pytester: pytest.Pytester) -> None:
    """The end of a fixture set up before the session woke is its clean-up, not a change made outside isolation:
    a later test that brings its declaration back has not 'cleaned up', it leaks."""
    result = run(pytester, REPEATS_A_WOKEN_FIXTURE)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "leaks: 1 test(s) left global state changed (restored)",
        "  test_d2.py::test_repeats_it_and_leaks -> guards: declared targets 7.5 (from module), were none",
    ])
