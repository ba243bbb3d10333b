"""What a project's implementations of our hooks return, checked one implementation at a time: the answer of a
``firstresult`` hook with the file it came from, and ``pytest_trtcap_isolated_state`` entries of the wrong shape
refused with the hook, the file and the value named (``pytest_trtcap.hook_results``).

The implementations are registered with a real pluggy ``PluginManager`` holding our own hook specifications."""

from __future__ import annotations

import types
from typing import Any

import pluggy
import pytest

from pytest_trtcap import hooks
from pytest_trtcap.hook_results import first_result, isolated_state_entries, shown

hookimpl = pluggy.HookimplMarker("pytest")


def plugin_module(name: str, **functions: Any) -> types.ModuleType:
    """A conftest-like module at ``/project/<name>.py`` implementing the given hooks."""
    module = types.ModuleType(name)
    module.__file__ = f"/project/{name}.py"
    for hook, function in functions.items():
        setattr(module, hook, hookimpl(function))
    return module


def manager(*plugins: Any) -> pluggy.PluginManager:
    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(hooks)
    for plugin in plugins:
        pm.register(plugin)
    return pm


def state_config(*values: Any) -> types.SimpleNamespace:
    """A config whose ``hook`` has one ``pytest_trtcap_isolated_state`` implementation per value, in order."""
    plugins = [plugin_module(f"conftest_{i}", pytest_trtcap_isolated_state=lambda config, v=value: v)
               for i, value in enumerate(values)]
    return types.SimpleNamespace(hook=manager(*plugins).hook)


def noop() -> None:
    return None


# --- shown --------------------------------------------------------------------------------------------------


def test_shown_is_one_line_and_bounded():
    class MultiLine:
        def __repr__(self) -> str:
            return "first\nsecond\rthird"

    assert shown(MultiLine()) == "first\\nsecond\\rthird"
    text = shown("x" * 1000, limit=20)
    assert len(text) == 20 and text.endswith("...") and text.startswith("'xxx")


def test_shown_never_raises_on_a_repr_that_does():
    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert shown(Hostile()) == "<Hostile object; repr() raised RuntimeError>"


# --- firstresult ------------------------------------------------------------------------------------------


def test_first_result_is_the_last_registered_answer_and_names_its_file():
    early = plugin_module("conftest_root", pytest_trtcap_target_capabilities=lambda config: "8.9")
    late = plugin_module("conftest_sub", pytest_trtcap_target_capabilities=lambda config: "7.5")
    found = first_result(manager(early, late).hook.pytest_trtcap_target_capabilities, config=None)
    assert (found.value, found.where) == ("7.5", "/project/conftest_sub.py")


def test_first_result_skips_implementations_that_pass():
    answering = plugin_module("answering", pytest_trtcap_target_capabilities=lambda config: [(7, 5)])
    passing = plugin_module("passing", pytest_trtcap_target_capabilities=lambda config: None)
    found = first_result(manager(answering, passing).hook.pytest_trtcap_target_capabilities, config=None)
    assert (found.value, found.where) == ([(7, 5)], "/project/answering.py")
    nobody = plugin_module("nobody", pytest_trtcap_target_capabilities=lambda config: None)
    assert first_result(manager(nobody).hook.pytest_trtcap_target_capabilities, config=None) is None


def test_a_plugin_object_without_a_file_is_named_by_its_registered_name():
    class Plugin:
        @hookimpl
        def pytest_trtcap_target_capabilities(self, config):
            return "12.0"

    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(hooks)
    pm.register(Plugin(), name="my-ci-plugin")
    found = first_result(pm.hook.pytest_trtcap_target_capabilities, config=None)
    assert (found.value, found.where) == ("12.0", "my-ci-plugin")


def test_wrappers_are_not_asked_for_an_answer():
    class Wrapper:
        @hookimpl(wrapper=True)
        def pytest_trtcap_target_capabilities(self, config):
            return (yield)

    answering = plugin_module("answering", pytest_trtcap_target_capabilities=lambda config: "8.6")
    found = first_result(manager(answering, Wrapper()).hook.pytest_trtcap_target_capabilities, config=None)
    assert (found.value, found.where) == ("8.6", "/project/answering.py")


# --- pytest_trtcap_isolated_state -----------------------------------------------------------------------------


def test_entries_of_every_implementation_are_kept_in_pluggy_order():
    first = [("first", noop, lambda value: None)]
    second = (("second a", noop, lambda value: None), ("second b", noop, lambda value: None))
    entries = isolated_state_entries(state_config(first, None, second))
    assert [e.label for e in entries] == ["second a", "second b", "first"]  # last registered is called first
    assert entries[-1].snapshot is noop


@pytest.mark.parametrize("value, problem, named", [
    (("label", noop, noop), "a single entry; return a list of them", "('label', <function noop"),
    ("label", "not a list", "'label'"),
    ({"label": noop}, "not a list", "{'label': <function noop"),
    (42, "not a list", "42"),
    ([("label", noop)], "an entry of another shape", "('label', <function noop"),
    ([(b"label", noop, noop)], "an entry of another shape", "(b'label'"),
    ([("label", noop, "restore")], "an entry of another shape", "'restore')"),
    ([("ok", noop, noop), ["label", noop, noop]], "an entry of another shape", "['label'"),
])
def test_a_bad_value_is_a_usage_error_naming_hook_file_and_value(value, problem, named):
    with pytest.raises(pytest.UsageError) as info:
        isolated_state_entries(state_config(value))
    message = str(info.value)
    assert message.startswith("trtcap: hook pytest_trtcap_isolated_state in /project/conftest_0.py: expected a list")
    assert f"got {problem}: " in message
    assert named in message.partition(f"got {problem}: ")[2]
    assert "\n" not in message


def test_a_bad_value_is_found_whichever_implementation_returned_it():
    good = [("good", noop, noop)]
    with pytest.raises(pytest.UsageError, match=r"in /project/conftest_1\.py: .* got not a list: 'oops'"):
        isolated_state_entries(state_config(good, "oops"))


def test_a_late_plugin_object_registered_without_a_name_is_named_by_its_file(pytester: pytest.Pytester) -> None:
    """A subfolder conftest registering a plugin object in its pytest_configure: pluggy names it by a number, which
    tells the user nothing; the error names the file that defines the hook instead."""
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(
        "class TargetsPlugin:\n    def pytest_trtcap_target_capabilities(self, config):\n        return '7.5'\n\n"
        "def pytest_configure(config):\n    config.pluginmanager.register(TargetsPlugin())\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_target_capabilities in *sub*conftest.py*: *"])


def test_a_file_name_with_a_line_break_prints_no_line_of_its_own(pytester: pytest.Pytester) -> None:
    """The error names the implementing file; a folder whose name holds a line break must not start a line that
    looks like pytest's."""
    sub = pytester.mkpydir("sub\nPASSED forged")
    (sub / "conftest.py").write_text("def pytest_trtcap_target_capabilities(config):\n    return '7.5'\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_target_capabilities in *sub\\nPASSED forged*"])
    assert not any(line.startswith("PASSED forged") for line in result.stderr.lines)


@pytest.mark.parametrize("hook", ["pytest_trtcap_target_capabilities", "pytest_trtcap_isolated_state"])
def test_an_implementation_that_raises_is_a_usage_error_naming_hook_file_line_and_exception(
    pytester: pytest.Pytester, hook: str
) -> None:
    """A project's hook that fails is its bug: one error naming where, with the line that raised, before the first
    test; not pytest's internal-error traceback through the plugin (exit 3)."""
    pytester.makeconftest(f"def {hook}(config):\n    raise RuntimeError('no matrix\\nPASSED forged')\n")
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"ERROR: trtcap: hook {hook} in *conftest.py raised "
                                 "RuntimeError('no matrix\\nPASSED forged') at *conftest.py:2"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert not any(line.startswith("PASSED forged") for line in result.stderr.lines + result.stdout.lines)
