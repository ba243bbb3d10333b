"""The hook specifications (``pytest_trtcap.hooks``) as a project implementing them sees them: pluggy holds each
implementation to its spec, the targets hook's first non-None answer wins, and every implementation of the
isolated-state hook is held, not the first one only."""

from __future__ import annotations

import pytest

PLAIN_TEST = "def test_one():\n    pass\n"


@pytest.mark.parametrize("hook", ["pytest_trtcap_target_capabilities", "pytest_trtcap_isolated_state"])
def test_an_implementation_asking_for_an_argument_the_spec_lacks_is_refused_naming_it(
        pytester: pytest.Pytester, hook: str) -> None:
    pytester.makeconftest(f"def {hook}(config, session):\n    return None\n")
    pytester.makepyfile(PLAIN_TEST)
    result = pytester.runpytest_subprocess()
    assert result.ret != pytest.ExitCode.OK
    output = result.stdout.str() + result.stderr.str()
    assert f"for hook '{hook}'" in output, output[-2000:]
    assert "Argument(s) {'session'} are declared in the hookimpl but can not be found in the hookspec" in output


def test_first_hook_result_wins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("def pytest_trtcap_target_capabilities(config):\n    return None\n")
    pytester.syspathinsert()
    pytester.makepyfile(
        plugin_a="def pytest_trtcap_target_capabilities(config):\n    return '8.9'\n",
    )
    pytester.makepyfile(PLAIN_TEST)
    result = pytester.runpytest("-p", "plugin_a")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["trtcap: targets: 8.9 (from hook pytest_trtcap_target_capabilities);*"])


def test_every_implementation_of_the_isolated_state_hook_is_held(pytester: pytest.Pytester) -> None:
    pytester.syspathinsert()
    pytester.makepyfile(
        conftest='STATE = {"n": 0}\n\n\ndef pytest_trtcap_isolated_state(config):\n'
                 '    return [("conftest counter", lambda: STATE["n"], lambda v: STATE.__setitem__("n", v))]\n',
        plugin_b='STATE = {"n": 0}\n\n\ndef pytest_trtcap_isolated_state(config):\n'
                 '    return [("plugin counter", lambda: STATE["n"], lambda v: STATE.__setitem__("n", v))]\n',
        test_counters="import conftest, plugin_b\n\n\ndef test_changes_both():\n"
                      '    conftest.STATE["n"] += 1\n    plugin_b.STATE["n"] += 1\n\n\n'
                      'def test_sees_both_put_back():\n    assert conftest.STATE["n"] == plugin_b.STATE["n"] == 0\n',
    )
    result = pytester.runpytest_subprocess("-p", "plugin_b")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["leaks: 1 test left global state changed (restored)",
                                 "  test_counters.py::test_changes_both -> *"])
    (line,) = [x for x in result.stdout.lines if x.startswith("  test_counters.py::test_changes_both -> ")]
    assert sorted(line.split(" -> ", 1)[1].split("; ")) == ["conftest counter changed", "plugin counter changed"]


# --- a project's isolated-state entry that fails never crashes the session -----------------------------------

BROKEN_ENTRY = '''
STATE = {{"n": 0}}


class Value:
    """Compares like an int until its values differ, then does what the scenario says."""

    def __init__(self, n):
        self.n = n

    def __ne__(self, other):
        if self.n != other.n and {compare_raises}:
            raise RuntimeError("no compare")
        return self.n != other.n


def snapshot():
    if {snapshot_raises}:
        raise RuntimeError("no snapshot")
    return Value(STATE["n"])


def restore(saved):
    if {restore_raises}:
        raise RuntimeError("no restore")
    STATE["n"] = saved.n


def pytest_trtcap_isolated_state(config):
    return [("counter", snapshot, restore)]
'''

NUMPY_ENTRY = '''
import numpy

STATE = {"n": 0}


def pytest_trtcap_isolated_state(config):
    return [("counter", lambda: numpy.array([STATE["n"], 1]),
             lambda saved: STATE.__setitem__("n", int(saved[0])))]
'''

CHANGES_THEN_CLEAN = '''
import pytest
import conftest


@pytest.fixture
def plain():
    yield


def test_one({fixture}):
    conftest.STATE["n"] += 1


def test_two({fixture}):
    pass
'''

ENTRY_FAILURES = {
    "snapshot raises": (dict(snapshot_raises=True),
                        "entry 'counter': snapshot() raised RuntimeError('no snapshot') at *conftest.py:*"),
    "restore raises": (dict(restore_raises=True),
                       "entry 'counter': restore() raised RuntimeError('no restore') at *conftest.py:*"),
    "comparison raises": (dict(compare_raises=True),
                          "entry 'counter': its snapshots cannot be compared with != (RuntimeError('no compare'))*"),
    "numpy snapshot": (None, "entry 'counter': its snapshots cannot be compared with != (ValueError('The truth value "
                             "of an array with more than one element is ambiguous*"),
}


XDIST = ("-n", "2", "--dist", "loadfile")
ENTRY_FAILURE_RUNS = [
    *[pytest.param(scenario, (), fixture, id=f"{scenario}, {fixture or 'test only'}")
      for scenario in sorted(ENTRY_FAILURES) for fixture in ("", "plain")],
    pytest.param("numpy snapshot", XDIST, "plain", id="numpy snapshot, plain, xdist"),
    pytest.param("restore raises", XDIST, "", id="restore raises, test only, xdist"),
]


@pytest.mark.parametrize("scenario, flags, fixture", ENTRY_FAILURE_RUNS)
def test_an_isolated_state_entry_that_fails_is_one_error_on_its_test_and_the_session_ends_normally(
        pytester: pytest.Pytester, scenario: str, flags: tuple, fixture: str) -> None:
    """A project's snapshot, comparison or restore that raises is its bug: one error on the test whose state could
    not be held or restored, naming the hook, the file and the entry; pytest's own teardown is not broken, the next
    test runs, and the session ends with its summary, not a traceback out of a session hook."""
    flavour, named = ENTRY_FAILURES[scenario]
    if flavour is None:
        conftest = NUMPY_ENTRY
    else:
        conftest = BROKEN_ENTRY.format(**{"snapshot_raises": False, "restore_raises": False,
                                          "compare_raises": False, **flavour})
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_entry=CHANGES_THEN_CLEAN.format(fixture=fixture))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA", "-vv",
                                          *flags)
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    result.stdout.fnmatch_lines([f"ERROR test_entry.py::test_one - *trtcap: hook pytest_trtcap_isolated_state in "
                                 f"*conftest.py: {named}"])
    assert "PASSED test_entry.py::test_two" in output
    for broken in ("Traceback", "INTERNALERROR", "not torn down properly"):
        assert broken not in output, output


SESSION_FIXTURE_NEVER_UNDONE = '''
import pytest
import conftest


@pytest.fixture(scope="session")
def changes_for_the_session():
    conftest.STATE["n"] += 1
    yield


def test_one(changes_for_the_session):
    conftest.STATE["n"] += 1
    pytest.exit("stopped here")


def test_two(changes_for_the_session):
    pass
'''


def test_an_entry_that_fails_once_a_stopped_session_ends_is_named_in_the_summary(pytester: pytest.Pytester) -> None:
    """A session stopped inside a test (pytest.exit, Ctrl-C) restores that test and ends its fixtures after the
    last teardown: a failed restore then has no test to be reported on, and is named in the summary instead of
    ending the session in a traceback."""
    pytester.makeconftest(BROKEN_ENTRY.format(snapshot_raises=False, restore_raises=True, compare_raises=False))
    pytester.makepyfile(test_entry=SESSION_FIXTURE_NEVER_UNDONE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    result.stdout.fnmatch_lines(["*! _pytest.outcomes.Exit: stopped here !*"])
    result.stdout.fnmatch_lines(["*- trtcap -*", "trtcap: hook pytest_trtcap_isolated_state in *conftest.py: "
                                 "entry 'counter': restore() raised RuntimeError('no restore') at *conftest.py:*"])
    assert "Traceback" not in output and "INTERNALERROR" not in output, output


TEARDOWN_ALSO_FAILS = '''
import pytest
import conftest


@pytest.fixture
def fails_in_teardown():
    yield
    raise RuntimeError("its own teardown error")


def test_one(fails_in_teardown):
    conftest.STATE["n"] += 1


def test_two():
    pass
'''


def test_an_entry_that_fails_beside_a_teardown_error_is_not_blamed_on_the_next_test(
        pytester: pytest.Pytester) -> None:
    """The teardown's own error is the one its test shows; the entry's error is named in the summary, never
    reported on the next test, which passes."""
    pytester.makeconftest(BROKEN_ENTRY.format(snapshot_raises=False, restore_raises=True, compare_raises=False))
    pytester.makepyfile(test_entry=TEARDOWN_ALSO_FAILS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA", "-vv")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["ERROR test_entry.py::test_one - RuntimeError: its own teardown error"])
    result.stdout.fnmatch_lines(["*- trtcap -*", "trtcap: hook pytest_trtcap_isolated_state in *conftest.py: "
                                 "entry 'counter': restore() raised RuntimeError('no restore') at *conftest.py:*"])
    assert "PASSED test_entry.py::test_two" in result.stdout.str()


MODULE_FIXTURE_CHANGES = '''
import pytest
import conftest


@pytest.fixture(scope="module")
def changes():
    conftest.STATE["n"] += 1
    yield


def test_one(changes):
    pass


def test_two():
    pass
'''
NOT_RESTORED = "(not restored: the restore() of entry 'counter' failed)"


@pytest.mark.parametrize("tests, leaker, who", [
    (CHANGES_THEN_CLEAN.format(fixture=""), "test_entry.py::test_one", "1 test"),
    (MODULE_FIXTURE_CHANGES,
     "test_entry.py::test_two (fixture 'changes', module scope, set up for test_entry.py::test_one)", "1 fixture"),
], ids=["test", "module fixture"])
def test_a_leak_whose_entry_failed_to_restore_is_never_called_restored(
        pytester: pytest.Pytester, tests: str, leaker: str, who: str) -> None:
    """The summary says "restored" only of what was: a leak the project's restore() failed to put back says so."""
    pytester.makeconftest(BROKEN_ENTRY.format(snapshot_raises=False, restore_raises=True, compare_raises=False))
    pytester.makepyfile(test_entry=tests)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.stdout.fnmatch_lines([f"leaks: {who} left global state changed (not restored)",
                                 f"  {leaker} -> counter changed {NOT_RESTORED}"])
    assert "(restored)" not in result.stdout.str()
