"""The per-session hooks (``pytest_trtcap.session``) as a suite sees them: a leak in a set-up method is named after
the method the user wrote (pytest runs it as a fixture of its own), with its scope; it is restored before the
next test; and the summary counts each leaking test once."""

from __future__ import annotations

import pytest

XUNIT = '''
import trtcap_guards as guards


def setup_function(function):
    guards.declare_targets("8.9", origin="setup_function")


def teardown_function(function):
    pass


def test_function():
    pass


class TestMethods:
    def setup_method(self, method):
        guards.declare_targets("8.9", origin="setup_method")

    def test_method(self):
        pass


class TestClass:
    @classmethod
    def setup_class(cls):
        guards.declare_targets("8.9", origin="setup_class")

    def test_in_class(self):
        pass


class TestAfter:  # a method: setup_function does not run for it
    def test_sees_nothing_declared(self):
        assert guards.state_snapshot(fired=False).targets is None
'''

LEAKS = [  # a function-level set-up method is its test's, as a function-scoped fixture is; a class one is named
    "  test_xunit.py::test_function -> guards: declared targets 8.9 (from setup_function), were none",
    "  test_xunit.py::TestMethods::test_method -> guards: declared targets 8.9 (from setup_method), were none",
    "  test_xunit.py::TestClass::test_in_class (TestClass.setup_class/teardown_class, class scope) -> "
    "guards: declared targets 8.9 (from setup_class), were none",
]


def test_a_leak_in_a_set_up_method_is_named_on_its_unit_and_restored(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_xunit=XUNIT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-guards", "on")
    result.assert_outcomes(passed=4, warnings=3)
    result.stdout.fnmatch_lines(["*- trtcap -*", "leaks: 2 tests and 1 fixture left global state changed (restored)",
                                 *LEAKS])
