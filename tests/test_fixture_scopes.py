"""Fixtures of wider scopes that change the guards' state and undo it, nested in one another, as a user sees it.

The suites (``fixture_scope_suites``) assert the targets each test finds, so a wrong baseline, or a torn-down
fixture's state put back, fails them; their conftest prints the guards' state once every fixture has ended. Each
runs with nothing given (the first declaration, inside a session fixture's setup, wakes the dormant session), with
``--trtcap-strict`` (active from the start; a false leak would be an error), with ``-W error`` and under xdist (whose
workers wake the same way). Among such fixtures a real leak must still be named, restored, and nobody else's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import NamedTuple

import pytest
from fixture_scope_suites import CASCADE, CASCADE_LEAKS, FINAL_STATE, SESSION, SUITES

RUN = ("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")
MODES = [
    pytest.param((), id="woken by the first declaration"),
    pytest.param(("--trtcap-strict",), id="strict"),
    pytest.param(("-W", "error"), id="warnings are errors"),
    pytest.param(("-n", "2", "--dist", "loadfile"), id="xdist"),
]


def run(pytester: pytest.Pytester, files: dict[str, str], *flags: str) -> pytest.RunResult:
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
    result.stdout.fnmatch_lines(["leaks: 1 test and 1 fixture left global state changed (restored)", *sorted(LEAKED)])
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
        "leaks: 1 test left global state changed (restored)",
        "  test_d2.py::test_repeats_it_and_leaks -> guards: declared targets 7.5 (from module), were none",
    ])


# --- a wider fixture's leak beside a session fixture first requested in its scope (Torch-TensorRT's registries) ---


class Cascade(NamedTuple):
    result: pytest.RunResult
    xdist: bool


@pytest.fixture(scope="module", params=[(), ("-n", "2", "--dist", "loadfile")], ids=["one process", "xdist"])
def cascade(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Cascade:
    """One run of ``CASCADE`` in a subprocess with no visible CUDA device (importing Torch-TensorRT costs seconds)."""
    work = tmp_path_factory.mktemp("cascade")
    for path, text in CASCADE.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", *RUN, "-vv", *request.param], cwd=str(work), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    return Cascade(pytest.RunResult(proc.returncode, proc.stdout.splitlines(), [], 0.0), bool(request.param))


def test_a_wider_fixture_s_registry_leak_is_named_and_undone_though_a_later_session_fixture_changed_that_registry(
        cascade: Cascade) -> None:
    """Module, package and class fixtures that never take out what they added to a converter registry, the atomic
    subgraphs, a pass list or a table, while a session fixture first requested by a later test of their scope added
    to the same object: each is named when its scope ends, and the next scope's tests find the registries as at the
    session's start (plus what the live session fixtures added)."""
    result = cascade.result
    result.assert_outcomes(passed=15)
    if cascade.xdist:  # a worker that ran one file of the package ends the package fixture there: a leak there too
        leaks = [*CASCADE_LEAKS[:2], "  test_c_package/test_c?.py::test_* (fixture 'package_pass', package scope*) "
                 "-> added lowering pass package_lowering_pass at index *", *CASCADE_LEAKS[3:]]
        result.stdout.fnmatch_lines_random(["leaks: * left global state changed (restored)", *leaks])
        return
    result.stdout.fnmatch_lines([f"leaks: {len(CASCADE_LEAKS)} fixtures left global state changed (restored)"])
    result.stdout.fnmatch_lines_random(CASCADE_LEAKS)
    result.stdout.fnmatch_lines(["registries at the end: as they started"])


def test_a_wider_fixture_that_takes_out_what_it_added_beside_a_later_session_fixture_leaks_nothing(
        cascade: Cascade) -> None:
    out = cascade.result.stdout.str()
    named = [line for line in cascade.result.stdout.lines if line.startswith("  ") and "leaked" not in line
             and " (fixture '" in line and " -> " in line]
    assert not [line for line in named if "test_e1_clean_module" in line], named
    assert "PASSED test_e1_clean_module.py::test_second" in out, out
