"""Isolation of Torch-TensorRT's global state around every test and fixture, as a suite sees it.

``tests/isolation_suite`` holds one scenario per leak kind (every held registry, the guards' own state, fixtures of
every scope, unittest class fixtures, a clean-up after an opted-out test); it runs once, in a subprocess on a host
with no visible CUDA device (the GPU-less import hook must arm before torch_tensorrt is first imported), and each
test below checks one behaviour of that run. Importing torch_tensorrt costs seconds, hence the shared run.
"""

from __future__ import annotations

import fnmatch
import importlib.machinery
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SUITE = Path(__file__).with_name("isolation_suite")


@dataclass
class SuiteRun:
    returncode: int
    output: str

    @property
    def lines(self) -> list[str]:
        return self.output.splitlines()

    def outcome(self, test: str) -> str:
        """PASSED / FAILED / SKIPPED / ERROR of ``test`` (a node id's tail) from ``-rA``'s short summary (whose
        messages ``-vv`` keeps whole at any terminal width)."""
        found = [line.split()[0] for line in self.lines
                 if re.match(r"^(PASSED|FAILED|SKIPPED|ERROR|XFAIL) ", line) and test in line]
        assert found, f"{test} did not run\n{self.output[-4000:]}"
        return "ERROR" if "ERROR" in found else found[0]

    def leaks(self) -> dict[str, str]:
        """Who leaked -> what, from the ``trtcap`` summary section."""
        start = next(i for i, line in enumerate(self.lines) if re.match(r"^-+ trtcap -+$", line))
        out = {}
        for line in self.lines[start + 1:]:
            if not line.startswith("  "):
                if re.match(r"^(=|-){3,} ", line):
                    break
                continue
            who, _, what = line.strip().partition(" -> ")
            out[who] = what
        return out


def run_suite(tmp: Path, *args: str) -> SuiteRun:
    """``python -m pytest`` over a copy of the suite in ``tmp``, in a clean environment with no CUDA device."""
    work = tmp / "suite"
    shutil.copytree(SUITE, work)
    return run_in(work, *args)


def run_in(work: Path, *args: str) -> SuiteRun:
    """``python -m pytest`` in ``work``, in a clean environment with no CUDA device."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    env.update(CUDA_VISIBLE_DEVICES="", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-rA",
                           "-vv", *args], cwd=str(work), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600)
    return SuiteRun(proc.returncode, proc.stdout)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    return run_suite(tmp_path_factory.mktemp("isolation"), "--trt-target-sm", "7.5")


A = "iso_a_registries.py::"
C = "iso_c_fixtures.py::"

# --- every held registry: named, restored ------------------------------------------------------------------

REGISTRY_LEAKS = {
    A + "test_leaks_an_atomic_subgraph": "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)",
    A + "test_leaks_a_converter": "aten.erfinv.default: target added (1 converter); aten.mm.default: 1 converter added",
    A + "test_fails_after_leaking": "added ATOMIC_SUBGRAPHS entry (ReLUConvFail, (aten.relu.default,), True)",
    A + "test_raises_after_leaking": "aten.bmm.default: 1 converter added",
    A + "test_adds_a_disallowed_target": "disallowed_targets: aten.sigmoid.default added",
    A + "test_rebinds_a_registry_element": "DYNAMO_CONVERTERS.registries: registry added at index 0; "
                                           "DYNAMO_CONVERTERS.registries: registry removed from index 0",
    A + "test_appends_a_registry_dict": "DYNAMO_CONVERTERS.registries: registry added at index 1",
    A + "test_leaks_user_state": "user cache changed",
    A + "test_sets_the_user_flag": "user flag changed",
    A + "test_edits_the_held_settings_in_place": "compilation_settings.use_fp32_acc changed: True, was False",
    A + "test_edits_the_held_settings_then_rebinds_them":
        "compilation_settings.workspace_size changed: 123, was 0",
    A + "test_registers_a_lowering_pass": "added lowering pass my_pass at index 1",
    A + "test_adds_a_pre_lowering_pass": "added pre-lowering pass my_pre_pass at index 0",
    A + "test_registers_a_decomposition": "aten.relu.default: decomposition added",
    A + "TestUnittestIsolation::test_leaks": "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)",
}


@pytest.mark.parametrize("test", sorted(REGISTRY_LEAKS))
def test_each_registry_leak_is_named_in_the_summary(suite: SuiteRun, test: str) -> None:
    assert suite.leaks().get(test) == REGISTRY_LEAKS[test], suite.output[-6000:]


def _has_constant_fold_exclusion_rules() -> bool:
    """Whether the installed release has them (2.14 does; 2.11 to 2.13 do not), read without importing it."""
    spec = importlib.machinery.PathFinder.find_spec("torch_tensorrt")
    assert spec is not None and spec.submodule_search_locations, "torch_tensorrt is not installed"
    package = Path(list(spec.submodule_search_locations)[0])
    return (package / "dynamo" / "lowering" / "constant_fold_exclusions" / "_core.py").is_file()


def test_a_constant_fold_exclusion_rule_leak_is_named_where_the_release_has_them(suite: SuiteRun) -> None:
    """Isolation holds what the running release has; where it has no such rules there is nothing to hold."""
    test = A + "test_registers_a_constant_fold_exclusion_rule"
    if _has_constant_fold_exclusion_rules():
        assert suite.leaks().get(test) == "my_rule: constant-fold exclusion rule added", suite.output[-6000:]
    else:
        assert f"{test} SKIPPED" in suite.output
        assert re.search(r"^SKIPPED \[1\] iso_a_registries\.py:\d+: this release has no constant-fold exclusion rules$",
                         suite.output, re.M), suite.output[-6000:]
        assert test not in suite.leaks()


@pytest.mark.parametrize("test", [A + "test_registers_a_lowering_pass", A + "test_registers_a_decomposition",
                                  A + "test_adds_a_disallowed_target"])
def test_each_leak_warns_on_the_test_that_made_it(suite: SuiteRun, test: str) -> None:
    assert f"TrtcapLeakWarning: {test} leaked global state: {REGISTRY_LEAKS[test]}" in suite.output


def test_a_disabled_torch_decomposition_is_named(suite: SuiteRun) -> None:
    what = suite.leaks()[A + "test_disables_a_torch_decomposition"]
    assert re.fullmatch(r"aten\.\S+: enabled torch decomposition removed", what), what


def test_after_all_those_leaks_the_state_is_as_before(suite: SuiteRun) -> None:
    assert suite.outcome(A + "test_everything_is_as_before") == "PASSED"


def test_failing_and_raising_leakers_fail_for_their_own_reason_only(suite: SuiteRun) -> None:
    assert suite.outcome(A + "test_fails_after_leaking") == "FAILED"
    assert suite.outcome(A + "test_raises_after_leaking") == "FAILED"
    assert f"FAILED {A}test_fails_after_leaking - AssertionError: failed before removing" in suite.output


def test_a_compile_changing_the_settings_is_restored_silently(suite: SuiteRun) -> None:
    assert not [who for who in suite.leaks() if "compilation_settings" in who]
    assert suite.outcome(A + "test_changes_compilation_settings") == "PASSED"


def test_compilation_settings_edited_in_place_are_named_and_put_back_by_value(suite: SuiteRun) -> None:
    """The validators and the audit read them: an edit of the held object, kept or rebound away, is put back."""
    assert suite.outcome(A + "test_the_held_settings_are_as_before") == "PASSED"


def test_a_user_snapshot_that_is_none_is_held_like_any_other(suite: SuiteRun) -> None:
    assert suite.outcome(A + "test_the_user_flag_is_as_before") == "PASSED"


def test_a_fixture_that_cleans_up_after_itself_is_not_a_leak(suite: SuiteRun) -> None:
    assert not [who for who in suite.leaks() if "scoped_atomic_subgraph" in who or "test_fixture_scoped" in who]
    assert suite.outcome(A + "test_fixture_scoped_change_is_not_a_leak") == "PASSED"


# --- the guards' own state ------------------------------------------------------------------------------------


def test_a_leaked_target_declaration_is_named_and_the_next_marker_still_skips(suite: SuiteRun) -> None:
    assert suite.leaks()["iso_b_guards.py::test_declares_89_and_leaves_it"] == (
        "guards: declared targets 8.9 (from a leaky test), were 7.5 (from --trt-target-sm)")
    assert "SKIPPED [1] iso_b_guards.py:16: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 (targets 7.5 from " \
        "--trt-target-sm)" in suite.lines


def test_a_leaked_neutralization_is_named_and_undone(suite: SuiteRun) -> None:
    assert suite.leaks()["iso_b_guards.py::test_neutralizes_and_leaves_it"] == (
        "guards: left neutralized aten.mm.default")
    assert suite.outcome("iso_b_guards.py::test_guards_state_is_as_before") == "PASSED"


# --- fixtures of every scope ------------------------------------------------------------------------------------

#: Who is named -> what. A function-scoped fixture's leak is its test's (the contract's unit), a wider one's its own.
FIXTURE_LEAKS = {
    f"{C}test_uses_a_function_fixture_that_leaks": "added ATOMIC_SUBGRAPHS entry (FunctionSetupLeak, (), True)",
    f"{C}test_uses_a_finalizer_that_leaks": "added ATOMIC_SUBGRAPHS entry (FinalizerLeak, (), True)",
    f"{C}test_uses_a_fixture_that_fails_after_leaking": "added ATOMIC_SUBGRAPHS entry (BrokenSetupLeak, (), True)",
    "iso_c2_xunit.py::test_sees_the_module_state (iso_c2_xunit setup_module/teardown_module, module scope)":
        "added ATOMIC_SUBGRAPHS entry (XunitModuleLeak, (), True)",
    f"{C}TestTearDownClassLeaks::test_runs (fixture 'module_leaker', module scope, "
    f"set up for {C}test_first_test_of_the_module_fixture)": "added ATOMIC_SUBGRAPHS entry (ModuleSetupLeak, (), True)",
    f"{C}TestSetUpClassLeaks::test_sees_its_class_state (TestSetUpClassLeaks.setUpClass/tearDownClass, class scope)":
        "added ATOMIC_SUBGRAPHS entry (SetUpClassLeak, (), True)",
    f"{C}TestTearDownClassLeaks::test_runs (TestTearDownClassLeaks.setUpClass/tearDownClass, class scope)":
        "added ATOMIC_SUBGRAPHS entry (TearDownClassLeak, (), True)",
}


@pytest.mark.parametrize("who", sorted(FIXTURE_LEAKS))
def test_a_fixture_leak_is_named_with_its_unit(suite: SuiteRun, who: str) -> None:
    assert suite.leaks().get(who) == FIXTURE_LEAKS[who], "\n".join(suite.leaks())


def test_a_session_fixture_leak_is_named_when_the_session_ends(suite: SuiteRun) -> None:
    named = {who: what for who, what in suite.leaks().items() if "'session_leaker', session scope" in who}
    assert list(named.values()) == ["aten.erfinv.default: target added (1 converter)"], suite.leaks()
    assert list(named)[0] == ("iso_e_no_isolation.py::test_the_clean_up_was_kept (fixture 'session_leaker', "
                              f"session scope, set up for {C}test_uses_the_session_fixture)")


def test_fixture_leaks_are_restored_when_their_scope_ends_and_never_under_a_live_fixture(suite: SuiteRun) -> None:
    assert suite.outcome(C + "test_uses_a_fixture_that_fails_after_leaking") == "ERROR"
    for test in ("test_uses_a_function_fixture_that_leaks", "test_uses_a_finalizer_that_leaks",
                 "test_first_test_of_the_module_fixture", "test_module_fixture_still_alive_is_not_restored_away",
                 "test_uses_the_session_fixture", "TestSetUpClassLeaks::test_sees_its_class_state",
                 "TestTearDownClassLeaks::test_runs"):
        assert suite.outcome(C + test) == "PASSED"
    assert suite.outcome("iso_d_after_fixtures.py::test_only_the_live_session_fixture_remains") == "PASSED"


# --- issue 15: cleaning up after an opted-out test -----------------------------------------------------------


def test_cleaning_up_after_an_opted_out_test_is_not_a_leak_and_is_kept(suite: SuiteRun) -> None:
    assert not [who for who in suite.leaks() if who.startswith("iso_e_no_isolation.py::test_")
                and "session_leaker" not in who]
    assert suite.outcome("iso_e_no_isolation.py::test_the_clean_up_was_kept") == "PASSED"


def test_the_summary_counts_every_leak_once(suite: SuiteRun) -> None:
    # + a decomposition disabled, the guards' two, the session fixture, the odd name, and a constant-fold exclusion
    # rule where the release has them
    tests = len(REGISTRY_LEAKS) + 1 + 2 + 3 + 1 + _has_constant_fold_exclusion_rules()  # + the 3 function fixtures'
    fixtures = len(FIXTURE_LEAKS) - 3 + 1  # the wider ones, and the session fixture
    assert f"leaks: {tests} tests and {fixtures} fixtures left global state changed (restored)" in suite.output
    assert len(suite.leaks()) == tests + fixtures


# --- a first import inside a test body ---------------------------------------------------------------------------

IMPORT_IN_BODY = """
import sys


class BodyPattern:
    pass


def test_imports_torch_tensorrt_and_leaks():
    assert "torch_tensorrt" not in sys.modules
    from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import register_atomic_subgraph

    register_atomic_subgraph(init_args=(), is_core_aten=True)(BodyPattern)


def test_sees_no_leaked_pattern():
    from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS

    assert not [e for e in ATOMIC_SUBGRAPHS if e[0] is BodyPattern]
"""


def test_a_leak_right_after_the_first_import_in_a_test_body_is_named_and_restored(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_body_import=IMPORT_IN_BODY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "leaks: 1 test left global state changed (restored)",
        "  test_body_import.py::test_imports_torch_tensorrt_and_leaks -> "
        "added ATOMIC_SUBGRAPHS entry (BodyPattern, (), True)",
    ])


OPTED_OUT_BESIDE_A_MODULE_FIXTURE = """
import pytest
import trtcap_guards as guards

guards.import_torch_tensorrt()
from torch_tensorrt.dynamo.partitioning import _atomic_subgraphs as A


@pytest.fixture(scope="module")
def harmless():
    yield


def test_uses(harmless):
    pass


@pytest.mark.trtcap_no_isolation
def test_opted_out_changes_and_keeps():
    A.ATOMIC_SUBGRAPHS.append(("kept", (), True))
"""

SEES_IT_KEPT = """
from torch_tensorrt.dynamo.partitioning import _atomic_subgraphs as A


def test_kept_still_there():
    assert ("kept", (), True) in A.ATOMIC_SUBGRAPHS
"""


@pytest.mark.parametrize("flags", [(), ("--trtcap-strict",)])
def test_an_opted_out_change_is_not_blamed_on_a_module_fixture_ending_with_it(
    pytester: pytest.Pytester, flags: tuple
) -> None:
    """README: an opted-out test's changes are kept and become the baseline, whatever fixture ends beside it."""
    pytester.makepyfile(test_f=OPTED_OUT_BESIDE_A_MODULE_FIXTURE, test_g=SEES_IT_KEPT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *flags)
    result.assert_outcomes(passed=3)
    assert "leaked global state" not in result.stdout.str()
    assert "leaks:" not in result.stdout.str()


# --- the cascade: a failure before clean-up breaks the next test -------------------------------------------

CASCADE_CONFTEST = '''
import trtcap_guards as guards

# no GPU here, and without the plugin nothing answers torch_tensorrt's import-time device queries
guards.import_torch_tensorrt()
'''

CASCADE_SUITE = '''
"""Resource partitioning keeps each atomic subgraph's nodes in one engine (get_node_in_fusion_pattern)."""

import unittest

import torch
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import (
    ATOMIC_SUBGRAPHS,
    get_node_in_fusion_pattern,
    register_atomic_subgraph,
)

aten = torch.ops.aten


class ReLUAdd(torch.nn.Module):
    def forward(self, x, y):
        return aten.add.Tensor(aten.relu.default(x), y)


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x) + y


def fused_nodes():
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    ep = torch.export.export(Model(), (x, y)).run_decompositions(get_decompositions(False))
    graph = post_lowering(ep.module(), CompilationSettings()).graph
    return sorted(node.name for node in get_node_in_fusion_pattern(graph))


class TestResourcePartitioning(unittest.TestCase):
    def test_1_custom_atomic_subgraph(self):
        register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUAdd)
        self.assertEqual(fused_nodes(), ["add", "mul", "relu"])  # wrong: fails before the clean-up
        ATOMIC_SUBGRAPHS.remove((ReLUAdd, (), True))

    def test_2_stock_atomic_subgraphs_leave_relu_add_unfused(self):
        self.assertEqual(fused_nodes(), [])
'''

CONVERTER_SUITE = '''
import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter


def test_custom_mm_converter():
    @dynamo_tensorrt_converter(torch.ops.aten.mm.default)
    def mm_converter(ctx, target, args, kwargs, name):
        raise NotImplementedError
'''

CASCADE_NODE = "test_resource_partitioning.py::TestResourcePartitioning::test_1_custom_atomic_subgraph"
CASCADE_LEAK = "added ATOMIC_SUBGRAPHS entry (ReLUAdd, (), True)"


@pytest.fixture
def cascade(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CASCADE_CONFTEST)
    pytester.makepyfile(test_resource_partitioning=CASCADE_SUITE, test_custom_converter=CONVERTER_SUITE)
    return pytester


def leak_warnings(result: pytest.RunResult) -> int:
    """The plugin's warnings in the warnings summary (each release's torch adds deprecation warnings of its own)."""
    return sum("TrtcapLeakWarning: " in line for line in result.outlines)


def test_cascade_without_the_plugin_fails_the_innocent_test(cascade: pytest.Pytester) -> None:
    result = cascade.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider", "-rf", "-vv")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        f"FAILED {CASCADE_NODE} - AssertionError: Lists differ*",
        "FAILED test_resource_partitioning.py::TestResourcePartitioning::"
        "test_2_stock_atomic_subgraphs_leave_relu_add_unfused - AssertionError: Lists differ: ['add', 'relu'] != []",
    ])
    assert "trtcap" not in result.stdout.str()


def test_cascade_with_the_plugin_only_the_culprit_fails_and_is_named(cascade: pytest.Pytester) -> None:
    result = cascade.runpytest_subprocess("-p", "no:cacheprovider", "-rf", "-vv")
    result.assert_outcomes(passed=2, failed=1)
    assert leak_warnings(result) == 2
    result.stdout.fnmatch_lines([f"FAILED {CASCADE_NODE} - AssertionError: Lists differ*"])
    result.stdout.fnmatch_lines([
        f"*TrtcapLeakWarning: {CASCADE_NODE} leaked global state: {CASCADE_LEAK}",
    ])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "leaks: 2 tests left global state changed (restored)",
        "  test_custom_converter.py::test_custom_mm_converter -> aten.mm.default: 1 converter added",
        f"  {CASCADE_NODE} -> {CASCADE_LEAK}",
    ])


def test_cascade_under_strict_the_leaking_tests_error_in_teardown(cascade: pytest.Pytester) -> None:
    result = cascade.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-strict", "-rfE", "-vv")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1, errors=2)
    assert leak_warnings(result) == 2
    result.stdout.fnmatch_lines(["trtcap: gpu-less import: *; isolation: strict (from --trtcap-strict)"])
    result.stdout.fnmatch_lines_random([
        "*ERROR at teardown of TestResourcePartitioning.test_1_custom_atomic_subgraph*",
        "*ERROR at teardown of test_custom_mm_converter*",
        f"E*TrtcapLeakError: trtcap: {CASCADE_NODE} leaked global state (--trtcap-strict): {CASCADE_LEAK}",
        f"ERROR {CASCADE_NODE} - *TrtcapLeakError*",
        "ERROR test_custom_converter.py::test_custom_mm_converter - *TrtcapLeakError*",
        f"FAILED {CASCADE_NODE} - AssertionError*",
    ])
    # the innocent test still passes: strict reports the leak and restores all the same
    assert "test_2_stock_atomic_subgraphs_leave_relu_add_unfused FAILED" not in result.stdout.str()
    assert "FAILED test_resource_partitioning.py::TestResourcePartitioning::test_2" not in result.stdout.str()


# --- a fixture's leak under --trtcap-strict, -W error and xdist --------------------------------------------------

FIXTURE_LEAK = """
import pytest
import torch
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph


class FixturePattern(torch.nn.Module):
    pass


@pytest.fixture
def leaky():
    yield
    register_atomic_subgraph(init_args=(), is_core_aten=True)(FixturePattern)


def test_uses_leaky(leaky):
    pass


def test_after():
    assert not [e for e in ATOMIC_SUBGRAPHS if e[0] is FixturePattern]
"""
FIXTURE_SUBJECT = "test_fixture_leak.py::test_uses_leaky"  # a function-scoped fixture's leak is its test's
FIXTURE_WHAT = "added ATOMIC_SUBGRAPHS entry (FixturePattern, (), True)"


@pytest.mark.parametrize("flags", [["--trtcap-strict"], ["-W", "error::pytest_trtcap.TrtcapLeakWarning"]],
                         ids=["strict", "warnings-as-errors"])
def test_a_fixture_leak_errors_the_test_in_teardown_under_strict_or_warnings_as_errors(
        pytester: pytest.Pytester, flags: list[str]) -> None:
    pytester.makepyfile(test_fixture_leak=FIXTURE_LEAK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE", "-vv", *flags)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        f"E*TrtcapLeakError: trtcap: {FIXTURE_SUBJECT} leaked global state (*): {FIXTURE_WHAT}",
        "ERROR test_fixture_leak.py::test_uses_leaky - *TrtcapLeakError*",
    ])
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_fixture_leak_reaches_the_controllers_summary_under_xdist(pytester: pytest.Pytester) -> None:
    """One worker runs the file (loadfile); a second would only import torch_tensorrt to run nothing."""
    pytest.importorskip("xdist")
    pytester.makepyfile(test_fixture_leak=FIXTURE_LEAK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["leaks: 1 test left global state changed (restored)",
                                 f"  {FIXTURE_SUBJECT} -> {FIXTURE_WHAT}"])


# --- names with control characters ------------------------------------------------------------------------------

ODD_NAME = "iso_d_odd_names.py::test_registers_an_oddly_named_pass"


def test_a_leaked_name_with_a_line_break_or_terminal_escape_stays_on_its_leak_line(suite: SuiteRun) -> None:
    """A pass (or pattern, or label) named with a line break would start a line that looks like ours in the
    summary and the warning; a terminal escape would colour the rest of the report."""
    assert suite.outcome(ODD_NAME) == "PASSED"
    assert "\x1b" not in suite.output
    assert not [line for line in suite.lines if line.startswith("trtcap: forged")]
    assert re.fullmatch(r"added lowering pass odd\\ntrtcap: forged line \\x1b\[31mred at index \d+",
                        suite.leaks()[ODD_NAME]), suite.leaks()
    assert sum(f"TrtcapLeakWarning: {ODD_NAME} leaked global state: added lowering pass odd\\ntrtcap" in line
               for line in suite.lines) == 1, suite.output[-6000:]


WIDE_FIXTURE_UNDO = {
    "test_a.py": """
import pytest
import trtcap_guards as guards

@pytest.fixture(scope="module")
def declared():
    with guards.declare_targets("8.9", origin="module fixture"):
        yield

def test_leaks(declared):
    guards.declare_targets("7.5", origin="leaky test")  # never undone: the plugin restores it
""",
    "test_b.py": """
import trtcap_guards as guards

def test_after():
    assert guards.capability_decision(probe_host=False).origin != "module fixture"
""",
}


def test_a_wide_fixture_s_undo_still_works_after_a_test_leaked_a_newer_declaration(pytester: pytest.Pytester) -> None:
    """The plugin puts the guards back after the leaking test, and the module fixture's undo in its teardown then
    puts back what it found: the next module does not inherit the fixture's declaration."""
    pytester.makepyfile(**WIDE_FIXTURE_UNDO)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*test_a.py::test_leaks*declared targets 7.5 (from leaky test)*"])


# --- the host probe's memo, and the guards installed or uninstalled inside a test --------------------------------

HOST_MEMO = """
import pytest
import torch
from trtcap_guards import targets


def test_sets_the_host_memo_and_forgets():
    targets._host = ((7, 5),)


@pytest.mark.trt_fp32_gemm
def test_fp32_gemm_with_a_genuine_failure():
    assert False, "genuine"


def test_moves_to_cuda():
    torch.zeros(1, device="cuda")
"""


def test_a_host_memo_set_by_a_test_is_named_and_put_back(pytester: pytest.Pytester) -> None:
    """README: ``trtcap_guards.targets._host`` is the seam a test sets; forgotten, it would skip the next FP32 GEMM
    test's genuine failure and switch ``--trtcap-needs-gpu skip`` off for every later test."""
    pytester.makepyfile(test_host=HOST_MEMO)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--trtcap-needs-gpu",
                                           "skip", "-rA")
    result.assert_outcomes(passed=1, failed=1, skipped=1, warnings=1)
    result.stdout.fnmatch_lines(["FAILED test_host.py::test_fp32_gemm_with_a_genuine_failure*"])
    result.stdout.fnmatch_lines(["  test_host.py::test_sets_the_host_memo_and_forgets -> "
                                 "guards: host devices (targets._host) set to 7.5, were as probed"])


GUARDS_IN_A_TEST = """
import trtcap_guards as guards

guards.import_torch_tensorrt()
BEFORE = (guards.is_installed(), guards.builder_targets_installed())
assert BEFORE == {expected}, BEFORE


def test_changes_the_guards():
    guards.{call}()


def test_after():
    assert (guards.is_installed(), guards.builder_targets_installed()) == BEFORE
"""


@pytest.mark.parametrize(("flags", "call", "expected"), [
    (("-v",), "uninstall", (True, True)),
    (("-o", "trtcap_guards=off"), "install", (False, False)),
], ids=["uninstall-verbose", "install-under-off"])
def test_guards_changed_inside_a_test_come_back_with_their_builder_wrapper_on_one_short_line(
        pytester: pytest.Pytester, flags: tuple, call: str, expected: tuple) -> None:
    """The registry and the builder wrapper come back together; the leak line counts per registry, names a few
    targets (``-v``: all), names the builder wrapper, and holds no memory address."""
    pytester.makepyfile(test_guards_in_test=GUARDS_IN_A_TEST.format(call=call, expected=expected))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA", *flags)
    result.assert_outcomes(passed=2, warnings=1)
    leak_lines = [line for line in result.outlines if "test_changes_the_guards" in line and "->" in line]
    [line] = leak_lines
    what = "removed" if call == "uninstall" else "added"
    assert f"TRTInterpreter._populate_trt_builder_config: trtcap_guards' builder wrapper {what}" in line, line
    assert "0x" not in result.stdout.str()
    if "-v" in flags:
        assert f"aten.mm.default: guard {what}" in line and "Dynamo ATen Converters Registry" not in line, line
    else:
        assert re.search(rf"Dynamo ATen Converters Registry: \d+ targets changed \(guard {what} x\d+\): "
                         r"\S+, \S+, \S+ and \d+ more \(-v lists all\)", line), line
        assert len(line) < 400, line


# --- an entry replaced in place, every size kept, by fixtures of every scope ---------------------------------------
# Isolation must see a change that keeps every length and every container's identity (``d[k] = other``,
# ``lst[0] = other``, a settings field, a set member swapped), at the fixture that made it: a fixture that puts it
# back is clean and its tests see its change; one that does not is named when it ends, and the next scope starts
# from the state before it.

IN_PLACE_CONFTEST = '''
"""One edit per held object, each replacing one entry in place: every length and container kept. Each fixture makes
a fresh value named after itself, so fixtures of one edit may overlap."""

import itertools

import pytest
import torch

import trtcap_guards as guards

guards.import_torch_tensorrt()

from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (
    DYNAMO_ATEN_CONVERTERS, DYNAMO_CONVERTERS, ConverterSupport)
from torch_tensorrt.dynamo.lowering import _decomposition_groups as groups
from torch_tensorrt.dynamo.lowering.constant_fold_exclusions import _core as fold
from torch_tensorrt.dynamo.lowering.passes import _aten_lowering_pass as passes
from torch_tensorrt.dynamo.partitioning import _atomic_subgraphs as atomic
from trtcap_guards import state

aten = torch.ops.aten
DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(torch_executed_ops={aten.sigmoid.default}))
fold._CONSTANT_FOLD_EXCLUSION_RULES["proof_rule"] = lambda node: ()
NUMBERS = itertools.count(1000)


def function(name):
    def fn(*args):
        raise NotImplementedError

    fn.__name__ = name
    return fn


class Replace:
    """``container[key] = a fresh value``."""

    def __init__(self, container, key, make):
        self.container, self.key, self.make = container, key, make

    def begin(self):
        self.start = self.container()[self.key]

    def apply(self, name):
        old, new = self.container()[self.key], self.make(name)
        self.container()[self.key] = new
        return old, new

    def undo(self, token):
        self.container()[self.key] = token[0]

    def live(self, token):
        return self.container()[self.key] is token[1]

    def as_started(self):
        return self.container()[self.key] is self.start


class Swap:
    """One member of the disallowed targets swapped for another (never two at once)."""

    def begin(self):
        pass

    def apply(self, name):
        DYNAMO_CONVERTERS.disallowed_targets.discard(aten.sigmoid.default)
        DYNAMO_CONVERTERS.disallowed_targets.add(aten.tanh.default)

    def undo(self, token):
        DYNAMO_CONVERTERS.disallowed_targets.discard(aten.tanh.default)
        DYNAMO_CONVERTERS.disallowed_targets.add(aten.sigmoid.default)

    def live(self, token):
        return DYNAMO_CONVERTERS.disallowed_targets == {aten.tanh.default}

    def as_started(self):
        return DYNAMO_CONVERTERS.disallowed_targets == {aten.sigmoid.default}


class Declare:
    def begin(self):
        self.start = state.state_snapshot(fired=False)

    def apply(self, name):
        return name, guards.declare_targets("8.9", origin=name)

    def undo(self, token):
        token[1].undo()

    def live(self, token):
        return guards.capability_decision(probe_host=False).origin == token[0]

    def as_started(self):
        return state.state_snapshot(fired=False) == self.start


RELU = aten.relu.default
EDITS = {
    "converter_in_list": Replace(lambda: DYNAMO_ATEN_CONVERTERS[RELU], 0,
                                 lambda name: ConverterSupport(function(name))),
    "converter_list": Replace(lambda: DYNAMO_ATEN_CONVERTERS, RELU, lambda name: [ConverterSupport(function(name))]),
    "registry_name": Replace(lambda: DYNAMO_CONVERTERS.registry_names, 0, str),
    "atomic_subgraph": Replace(lambda: atomic.ATOMIC_SUBGRAPHS, 0,
                               lambda name: (type(name, (torch.nn.Module,), {}), (), True)),
    "pre_lowering_pass": Replace(lambda: passes.ATEN_PRE_LOWERING_PASSES.passes, 0, function),
    "lowering_pass": Replace(lambda: passes.ATEN_POST_LOWERING_PASSES.passes, 0, function),
    "decomposition": Replace(lambda: groups.TORCH_TRT_DECOMPOSITIONS, next(iter(groups.TORCH_TRT_DECOMPOSITIONS)),
                             function),
    "enabled_decomposition": Replace(lambda: groups.ENABLED_TORCH_DECOMPOSITIONS,
                                     next(iter(groups.ENABLED_TORCH_DECOMPOSITIONS)), function),
    "fold_rule": Replace(lambda: fold._CONSTANT_FOLD_EXCLUSION_RULES, "proof_rule", function),
    "settings_field": Replace(lambda: vars(DYNAMO_CONVERTERS.compilation_settings), "workspace_size",
                              lambda name: next(NUMBERS)),
    "disallowed_target": Swap(),
    "guards": Declare(),
}


MADE = {}  # fixture -> (edit, token)


def leak(edit, name):
    MADE[name] = edit, EDITS[edit].apply(name)
    return MADE[name][1]


def keep(edit, name):
    token = leak(edit, name)
    yield token
    EDITS[edit].undo(token)


def late(edit, name):
    yield
    leak(edit, name)


def live(scope):
    """The fixtures of ``scope`` whose edit is still there."""
    return [name for name, (edit, token) in MADE.items() if name.endswith(scope) and EDITS[edit].live(token)]


def changed():
    return [name for name, edit in EDITS.items() if not edit.as_started()]


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    """The state the first test starts from (the guards are installed by then)."""
    for edit in EDITS.values():
        edit.begin()


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"in-place edits at the end: {changed() or 'as they started'}")
'''

#: edit -> its leak line, as a pattern; ``{name}`` is the fixture that made it
IN_PLACE_EDITS = {
    "converter_in_list": "aten.relu.default: 1 converter replaced",
    "converter_list": "aten.relu.default: 1 converter replaced",
    "registry_name": "DYNAMO_CONVERTERS registry names or calling conventions changed",
    "atomic_subgraph": "added ATOMIC_SUBGRAPHS entry ({name}, (), True); removed ATOMIC_SUBGRAPHS entry (*)",
    "pre_lowering_pass": "added pre-lowering pass {name} at index 0; removed pre-lowering pass * from index 0",
    "lowering_pass": "added lowering pass {name} at index 0; removed lowering pass * from index 0",
    "decomposition": "aten.*: decomposition replaced",
    "enabled_decomposition": "aten.*: enabled torch decomposition replaced",
    "fold_rule": "proof_rule: constant-fold exclusion rule replaced",
    "settings_field": "compilation_settings.workspace_size changed: 1*, was *",
    "disallowed_target": "disallowed_targets: aten.sigmoid.default removed; "
                         "disallowed_targets: aten.tanh.default added",
    "guards": "guards: declared targets 8.9 (from {name}), were *",
}
ONE_AT_A_TIME = ("disallowed_target",)  # its fixtures must not overlap: function scope only
WIDE_EDITS = [edit for edit in IN_PLACE_EDITS if edit not in ONE_AT_A_TIME]


def _fixture(scope: str, kind: str, edit: str) -> str:
    name = f"{kind}_{edit}_{scope}"
    body = f"return leak({edit!r}, {name!r})" if kind == "leak" else f"yield from {kind}({edit!r}, {name!r})"
    return f"@pytest.fixture(scope={scope!r})\ndef {name}():\n    {body}\n\n\n"


def _in_place_files() -> dict[str, str]:
    head = "import pytest\nfrom conftest import EDITS, keep, late, leak, live\n\n\n"
    last = "def test_zz_every_edit_of_this_scope_is_undone():\n    assert live({scope!r}) == []\n"
    function = head + "".join(_fixture("function", kind, edit) for edit in IN_PLACE_EDITS
                              for kind in ("keep", "leak", "late"))
    for edit in IN_PLACE_EDITS:
        function += (f"def test_keep_{edit}(keep_{edit}_function):\n"
                     f"    assert EDITS[{edit!r}].live(keep_{edit}_function)\n\n\n"
                     f"def test_leak_{edit}(leak_{edit}_function):\n"
                     f"    assert EDITS[{edit!r}].live(leak_{edit}_function)\n\n\n"
                     f"def test_late_{edit}(late_{edit}_function):\n    assert live('_function') == []\n\n\n"
                     f"def test_body_{edit}():\n    leak({edit!r}, 'body_{edit}_function')\n\n\n")
    function += "".join(f"@pytest.fixture\ndef plain_{i}():\n    return {i}\n\n\n" for i in range(3))
    function += ("@pytest.fixture\ndef finalizer_function(request):\n"
                 "    request.addfinalizer(lambda: leak('lowering_pass', 'finalizer_function'))\n\n\n"
                 "def test_a_finalizer_edits(finalizer_function):\n    assert live('_function') == []\n\n\n"
                 "def test_among_many_fixtures(plain_0, keep_fold_rule_function, request, plain_2, "
                 "leak_atomic_subgraph_function, plain_1):\n"
                 "    assert EDITS['fold_rule'].live(keep_fold_rule_function)\n"
                 "    assert EDITS['atomic_subgraph'].live(leak_atomic_subgraph_function)\n\n\n")
    classes = head + "".join(_fixture("class", kind, edit) for edit in WIDE_EDITS for kind in ("keep", "leak"))
    for edit in WIDE_EDITS:
        classes += (f"class TestKeep_{edit}:\n"
                    f"    def test_sees_it(self, keep_{edit}_class):\n"
                    f"        assert EDITS[{edit!r}].live(keep_{edit}_class)\n\n"
                    f"    def test_still_sees_it(self, keep_{edit}_class):\n"
                    f"        assert EDITS[{edit!r}].live(keep_{edit}_class)\n\n\n"
                    f"class TestLeak_{edit}:\n"
                    f"    def test_sees_it(self, leak_{edit}_class):\n"
                    f"        assert EDITS[{edit!r}].live(leak_{edit}_class)\n\n\n")
    wide = {"module": head, "session": head}
    for scope in wide:
        wide[scope] += "".join(_fixture(scope, kind, edit) for edit in WIDE_EDITS for kind in ("keep", "leak"))
        for edit in WIDE_EDITS:
            wide[scope] += "".join(f"def test_{kind}_{edit}({kind}_{edit}_{scope}):\n"
                                   f"    assert EDITS[{edit!r}].live({kind}_{edit}_{scope})\n\n\n"
                                   for kind in ("keep", "leak"))
    return {"conftest.py": IN_PLACE_CONFTEST, "test_1_function.py": function + last.format(scope="_function"),
            "test_2_class.py": classes + last.format(scope="_class"), "test_3_module.py": wide["module"],
            "test_4_after_module.py": head + last.format(scope="_module"), "test_5_session.py": wide["session"]}


def _in_place_leaks() -> dict[str, tuple[str, int]]:
    """Who a leak line names (``fixture 'f', scope scope``, or a test) -> (the pattern of what, how many lines)."""
    function = "test_1_function.py::"
    out = {f"{function}test_a_finalizer_edits": (IN_PLACE_EDITS["lowering_pass"].format(name="finalizer_function"), 1),
           f"{function}test_among_many_fixtures": (
               IN_PLACE_EDITS["atomic_subgraph"].format(name="leak_atomic_subgraph_function"), 1)}
    for edit, what in IN_PLACE_EDITS.items():  # a function-scoped fixture's leak is its test's
        out[f"{function}test_body_{edit}"] = (what.format(name=f"body_{edit}_function"), 1)
        for kind in ("leak", "late"):
            out[f"{function}test_{kind}_{edit}"] = (what.format(name=f"{kind}_{edit}_function"), 1)
        # A module's (session's) keep and leak fixtures replace the same entry and end together: the keep fixture's
        # undo puts the original back over the leak's, so the object is as it started, which is no leak. The
        # guards' undo handle, undone out of order, hands its "before" on: the leak's declaration stays.
        for scope in ("class", "module", "session") if edit in WIDE_EDITS else ():
            if scope == "class" or edit == "guards":
                out[f"fixture 'leak_{edit}_{scope}', {scope} scope"] = (what.format(name=f"leak_{edit}_{scope}"), 1)
    return out


def _check_in_place_leaks(run: SuiteRun) -> None:
    found: dict[str, list[str]] = {}
    for who, what in run.leaks().items():
        fixture = re.search(r"\((fixture '[^']+', \w+ scope)", who)
        found.setdefault(fixture.group(1) if fixture else who, []).append(what)
    expected = _in_place_leaks()
    assert sorted(found) == sorted(expected), run.output[-6000:]
    for who, whats in found.items():
        pattern, count = expected[who]
        assert len(whats) == count and all(fnmatch.fnmatchcase(what, pattern) for what in whats), (who, whats)


def run_files(tmp: Path, files: dict[str, str], *args: str) -> SuiteRun:
    work = tmp / "suite"
    work.mkdir()
    for name, text in files.items():
        (work / name).write_text(text, encoding="utf-8")
    (work / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return run_in(work, *args)


def test_an_entry_replaced_in_place_is_named_as_the_leak_of_the_fixture_of_any_scope_that_left_it(
        tmp_path: Path) -> None:
    run = run_files(tmp_path, _in_place_files())
    assert run.returncode == 0, run.output[-6000:]
    assert not [line for line in run.lines if re.match(r"^(FAILED|ERROR) ", line)], run.output[-6000:]
    _check_in_place_leaks(run)
    assert "in-place edits at the end: as they started" in run.output


def test_an_entry_replaced_in_place_by_a_fixture_is_named_from_each_xdist_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    run = run_files(tmp_path, _in_place_files(), "-n", "2", "--dist", "loadfile")
    assert run.returncode == 0, run.output[-6000:]
    assert not [line for line in run.lines if re.match(r"^(FAILED|ERROR) ", line)], run.output[-6000:]
    _check_in_place_leaks(run)


def test_a_leak_error_under_strict_shows_the_test_not_the_plugin_s_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_s="import trtcap_guards as guards\n\n\ndef test_leaks():\n"
                               "    guards.declare_targets('8.9', origin='t')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-strict")
    result.assert_outcomes(passed=1, errors=1)
    errors = result.stdout.str().split("= ERRORS =")[1].split("warnings summary")[0]
    assert "ERROR at teardown of test_leaks" in errors
    assert "TrtcapLeakError: trtcap: test_s.py::test_leaks leaked global state (--trtcap-strict)" in errors
    assert "pytest_trtcap" not in errors.replace("pytest_trtcap.TrtcapLeakError", ""), errors
