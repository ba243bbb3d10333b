"""A finalizer a test's body adds (``request.addfinalizer``) runs in that test's teardown, before its fixtures end:
what it changes is the test's, what it puts back is the test's clean-up, and neither a fixture nor the next test is
blamed for it."""

from __future__ import annotations

import pytest

HEAD = '''
import pytest
import trtcap_guards as guards


def declare(origin):
    guards.declare_targets("8.9", origin=origin)


@pytest.fixture
def plain():
    return 1


def declared():
    return guards.state_snapshot(fired=False).targets
'''

LEAKS_FROM_A_FINALIZER = HEAD + '''

def test_leaks_beside_a_fixture(request, plain):
    request.addfinalizer(lambda: declare("beside a fixture"))


def test_leaks_alone(request):
    request.addfinalizer(lambda: declare("alone"))


def test_next_sees_nothing_declared():
    assert declared() is None
'''

CLEANS_UP_IN_A_FINALIZER = HEAD + '''

def test_cleans_up(request, plain):
    before = guards.state_snapshot(fired=False)
    declare("the body")
    request.addfinalizer(lambda: guards.restore_state(before))


def test_cleans_up_through_the_node(request):
    before = guards.state_snapshot(fired=False)
    declare("the body")
    request.node.addfinalizer(lambda: guards.restore_state(before))


def test_next_sees_nothing_declared():
    assert declared() is None
'''


def _run(pytester: pytest.Pytester, source: str, *args: str) -> pytest.RunResult:
    """``source`` as ``test_finalizers.py``, run in a fresh process in file order with the guards on."""
    pytester.makepyfile(test_finalizers=source)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--trtcap-guards", "on", *args)


def test_a_change_made_by_the_bodys_finalizer_is_the_tests_leak(pytester: pytest.Pytester) -> None:
    result = _run(pytester, LEAKS_FROM_A_FINALIZER)
    result.assert_outcomes(passed=3, warnings=2)
    result.stdout.fnmatch_lines([
        "leaks: 2 tests left global state changed (restored)",
        "  test_finalizers.py::test_leaks_beside_a_fixture -> guards: declared targets 8.9 (from beside a fixture), "
        "were none",
        "  test_finalizers.py::test_leaks_alone -> guards: declared targets 8.9 (from alone), were none",
    ])
    result.stdout.no_fnmatch_line("*plain*function scope*")
    result.stdout.no_fnmatch_line("*test_next_sees_nothing_declared ->*")


def test_a_change_the_bodys_finalizer_puts_back_is_no_leak(pytester: pytest.Pytester) -> None:
    result = _run(pytester, CLEANS_UP_IN_A_FINALIZER, "-W", "error::pytest_trtcap.TrtcapLeakWarning")
    result.assert_outcomes(passed=3)
    result.stdout.no_fnmatch_line("*leaks:*")


OPTED_OUT_AND_FAILING = HEAD + '''

@pytest.mark.trtcap_no_isolation
def test_opted_out_keeps_it(request, plain):
    request.addfinalizer(lambda: declare("opted out"))


def test_next_sees_it_kept():
    assert declared() == ((8, 9),)


def test_leaks_then_a_finalizer_fails(request, plain):
    declare("the body")
    request.addfinalizer(lambda: 1 / 0)
'''


def test_an_opted_out_tests_finalizer_is_kept_and_a_failing_one_hides_no_leak(pytester: pytest.Pytester) -> None:
    result = _run(pytester, OPTED_OUT_AND_FAILING)
    result.assert_outcomes(passed=3, errors=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*ZeroDivisionError*",
        "leaks: 1 test left global state changed (restored)",
        "  test_finalizers.py::test_leaks_then_a_finalizer_fails -> guards: declared targets 8.9 (from the body), "
        "were 8.9 (from opted out)",
    ])
    result.stdout.no_fnmatch_line("*plain*function scope*")


REQUESTED_IN_THE_BODY = HEAD + '''

@pytest.fixture
def declares_for_a_while():
    before = guards.state_snapshot(fired=False)
    guards.declare_targets("7.5", origin="the fixture")
    yield
    guards.restore_state(before)


def test_requests_then_leaks(request):
    request.getfixturevalue("plain")
    declare("after the request")


def test_requests_a_fixture_that_cleans_up(request):
    request.getfixturevalue("declares_for_a_while")
    assert declared() == ((7, 5),)


def test_next_sees_nothing_declared():
    assert declared() is None
'''


def test_a_fixture_the_body_requests_is_not_blamed_for_the_bodys_change(pytester: pytest.Pytester) -> None:
    result = _run(pytester, REQUESTED_IN_THE_BODY)
    result.assert_outcomes(passed=3, warnings=1)
    result.stdout.fnmatch_lines([
        "leaks: 1 test left global state changed (restored)",
        "  test_finalizers.py::test_requests_then_leaks -> guards: declared targets 8.9 (from after the request), "
        "were none",
    ])


FINALIZER_BEFORE_A_REQUEST = HEAD + '''

@pytest.fixture
def with_teardown():
    yield


def test_adds_a_finalizer_then_requests(request):
    request.addfinalizer(lambda: declare("a finalizer added first"))
    request.getfixturevalue("with_teardown")


def test_next_sees_nothing_declared():
    assert declared() is None
'''


def test_a_finalizer_the_body_added_before_requesting_a_fixture_is_still_the_tests(pytester: pytest.Pytester) -> None:
    result = _run(pytester, FINALIZER_BEFORE_A_REQUEST)
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines([
        "leaks: 1 test left global state changed (restored)",
        "  test_finalizers.py::test_adds_a_finalizer_then_requests -> guards: declared targets 8.9 "
        "(from a finalizer added first), were none",
    ])
    result.stdout.no_fnmatch_line("*with_teardown*function scope*")


CLEANS_UP_THROUGH_THE_NODE = HEAD + '''

@pytest.fixture
def declares_until_the_node_ends(request):
    before = guards.state_snapshot(fired=False)
    declare("the fixture")
    request.node.addfinalizer(lambda: guards.restore_state(before))


def test_uses_it(declares_until_the_node_ends):
    assert declared() == ((8, 9),)


def test_next_sees_nothing_declared():
    assert declared() is None
'''


def test_a_fixture_that_puts_its_change_back_in_a_node_finalizer_is_no_leak(pytester: pytest.Pytester) -> None:
    result = _run(pytester, CLEANS_UP_THROUGH_THE_NODE, "-W", "error::pytest_trtcap.TrtcapLeakWarning")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*leaks:*")
