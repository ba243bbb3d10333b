"""How often a fixture's end is checked, seen through a project's own held entry (whose ``snapshot`` the plugin
calls at every check): a fixture whose teardown has no code to run (no ``yield``, no finalizer of its own) ends
with nothing to compare, since nothing ran after the test's own check; every other fixture's end is compared, and a
change made between two fixture ends (by a finalizer on the test's node) is still found and put back before the next
test."""

from __future__ import annotations

import pytest

CONFTEST = '''
import pytest

STATE = {"value": 0}
CALLS = []


def pytest_trtcap_isolated_state(config):
    def snapshot():
        CALLS.append(1)
        return STATE["value"]

    return [("project value", snapshot, lambda value: STATE.update(value=value))]


def pytest_unconfigure(config):
    print(f"checks after the body: {len(CALLS)}")
'''

TESTS = '''
import pytest
from conftest import CALLS, STATE


@pytest.fixture
def plain_1():
    return 1


@pytest.fixture
def plain_2():
    return 2


@pytest.fixture
def plain_3(plain_1):
    return 3


@pytest.fixture
def with_teardown():
    yield
    STATE["value"] += 0


@pytest.fixture
def with_finalizer(request):
    request.addfinalizer(lambda: None)


@pytest.fixture
def node_finalizer_change(request):
    request.node.addfinalizer(lambda: STATE.update(value=7))


def test_no_fixtures():
    CALLS.clear()


def test_three_plain(plain_1, plain_2, plain_3):
    CALLS.clear()


def test_three_plain_and_two_with_teardown_code(plain_1, with_teardown, plain_2, with_finalizer, plain_3):
    CALLS.clear()


def test_a_node_finalizer_changes_it(plain_1, node_finalizer_change, plain_2):
    pass


def test_next_sees_it_put_back():
    assert STATE["value"] == 0
'''


def _checks_after_the_body(pytester: pytest.Pytester, test: str) -> int:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s", f"test_ends.py::{test}")
    result.assert_outcomes(passed=1)
    return int(result.stdout.str().split("checks after the body: ")[1].split()[0])


def test_only_fixtures_with_teardown_code_are_compared_at_their_end(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ends=TESTS)
    alone = _checks_after_the_body(pytester, "test_no_fixtures")
    assert alone >= 1  # the test's own check
    assert _checks_after_the_body(pytester, "test_three_plain") == alone
    assert _checks_after_the_body(pytester, "test_three_plain_and_two_with_teardown_code") == alone + 2


def test_a_change_between_two_fixture_ends_is_still_found(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ends=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           "test_ends.py::test_a_node_finalizer_changes_it",
                                           "test_ends.py::test_next_sees_it_put_back")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["leaks: 1 test left global state changed (restored)",
                                 "  test_ends.py::test_a_node_finalizer_changes_it (fixture 'plain_1', *) -> "
                                 "project value changed"])
