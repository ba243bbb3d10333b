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
    result.stdout.fnmatch_lines(["leaks: 1 test(s) left global state changed (restored)",
                                 "  test_counters.py::test_changes_both -> *"])
    (line,) = [x for x in result.stdout.lines if x.startswith("  test_counters.py::test_changes_both -> ")]
    assert sorted(line.split(" -> ", 1)[1].split("; ")) == ["conftest counter changed", "plugin counter changed"]
