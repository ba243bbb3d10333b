"""How often held state is compared, seen through a project's own held entry (whose ``snapshot`` the plugin calls
at every comparison): a test is one unit with its function-scoped fixtures, so after its body its state is compared
once, at its end, however many fixtures it has and whatever their teardowns run; a change a finalizer on the test's
node makes after the fixtures' ends is still found, named on the test, and put back before the next test."""

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


def test_a_test_s_function_scoped_fixtures_add_no_comparison_at_its_end(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ends=TESTS)
    alone = _checks_after_the_body(pytester, "test_no_fixtures")
    assert alone >= 1  # the test's own end
    assert _checks_after_the_body(pytester, "test_three_plain") == alone
    assert _checks_after_the_body(pytester, "test_three_plain_and_two_with_teardown_code") == alone


def test_a_change_made_after_the_fixtures_ended_is_still_found(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ends=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           "test_ends.py::test_a_node_finalizer_changes_it",
                                           "test_ends.py::test_next_sees_it_put_back")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["leaks: 1 test left global state changed (restored)",
                                 "  test_ends.py::test_a_node_finalizer_changes_it -> project value changed"])
