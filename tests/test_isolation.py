"""Isolation of Torch-TensorRT's global state around every test and fixture, as a suite sees it.

``tests/isolation_suite`` holds one scenario per leak kind (every held registry, the guards' own state, fixtures of
every scope, unittest class fixtures, a clean-up after an opted-out test); it runs once, in a subprocess on a host
with no visible CUDA device (the GPU-less import hook must arm before torch_tensorrt is first imported), and each
test below checks one behaviour of that run. Importing torch_tensorrt costs seconds, hence the shared run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List

import pytest

SUITE = Path(__file__).with_name("isolation_suite")


@dataclass
class SuiteRun:
    returncode: int
    output: str

    @property
    def lines(self) -> List[str]:
        return self.output.splitlines()

    def outcome(self, test: str) -> str:
        """PASSED / FAILED / SKIPPED / ERROR of ``test`` (a node id's tail) from ``-rA``'s short summary (whose
        messages ``-vv`` keeps whole at any terminal width)."""
        found = [line.split()[0] for line in self.lines
                 if re.match(r"^(PASSED|FAILED|SKIPPED|ERROR|XFAIL) ", line) and test in line]
        assert found, f"{test} did not run\n{self.output[-4000:]}"
        return "ERROR" if "ERROR" in found else found[0]

    def leaks(self) -> Dict[str, str]:
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
    A + "test_registers_a_lowering_pass": "added lowering pass my_pass at index 12",
    A + "test_adds_a_pre_lowering_pass": "added pre-lowering pass my_pre_pass at index 0",
    A + "test_registers_a_decomposition": "aten.relu.default: decomposition added",
    A + "test_registers_a_constant_fold_exclusion_rule": "my_rule: constant-fold exclusion rule added",
    A + "TestUnittestIsolation::test_leaks": "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)",
}


@pytest.mark.parametrize("test", sorted(REGISTRY_LEAKS))
def test_each_registry_leak_is_named_in_the_summary(suite: SuiteRun, test: str) -> None:
    assert suite.leaks().get(test) == REGISTRY_LEAKS[test], suite.output[-6000:]


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

FIXTURE_LEAKS = {
    f"{C}test_uses_a_function_fixture_that_leaks (fixture 'setup_leaker', function scope)":
        "added ATOMIC_SUBGRAPHS entry (FunctionSetupLeak, (), True)",
    f"{C}test_uses_a_finalizer_that_leaks (fixture 'finalizer_leaker', function scope)":
        "added ATOMIC_SUBGRAPHS entry (FinalizerLeak, (), True)",
    f"{C}test_uses_a_fixture_that_fails_after_leaking (fixture 'broken_leaker', function scope)":
        "added ATOMIC_SUBGRAPHS entry (BrokenSetupLeak, (), True)",
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
def test_a_fixture_leak_is_named_with_the_test_and_the_fixture(suite: SuiteRun, who: str) -> None:
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
    # + a decomposition disabled, the guards' two, the session fixture, the odd name
    expected = len(REGISTRY_LEAKS) + 1 + 2 + len(FIXTURE_LEAKS) + 1 + 1
    assert f"leaks: {expected} test(s) left global state changed (restored)" in suite.output
    assert len(suite.leaks()) == expected


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
        "leaks: 1 test(s) left global state changed (restored)",
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
    result.assert_outcomes(passed=2, failed=1, warnings=2)
    result.stdout.fnmatch_lines([f"FAILED {CASCADE_NODE} - AssertionError: Lists differ*"])
    result.stdout.fnmatch_lines([
        f"*TrtcapLeakWarning: {CASCADE_NODE} leaked global state: {CASCADE_LEAK}",
    ])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "leaks: 2 test(s) left global state changed (restored)",
        "  test_custom_converter.py::test_custom_mm_converter -> aten.mm.default: 1 converter added",
        f"  {CASCADE_NODE} -> {CASCADE_LEAK}",
    ])


def test_cascade_under_strict_the_leaking_tests_error_in_teardown(cascade: pytest.Pytester) -> None:
    result = cascade.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-strict", "-rfE", "-vv")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1, errors=2, warnings=2)
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
FIXTURE_SUBJECT = "test_fixture_leak.py::test_uses_leaky (fixture 'leaky', function scope)"
FIXTURE_WHAT = "added ATOMIC_SUBGRAPHS entry (FixturePattern, (), True)"


@pytest.mark.parametrize("flags", [["--trtcap-strict"], ["-W", "error::pytest_trtcap.TrtcapLeakWarning"]],
                         ids=["strict", "warnings-as-errors"])
def test_a_fixture_leak_errors_the_test_in_teardown_under_strict_or_warnings_as_errors(
        pytester: pytest.Pytester, flags: List[str]) -> None:
    pytester.makepyfile(test_fixture_leak=FIXTURE_LEAK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE", "-vv", *flags)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        f"E*TrtcapLeakError: trtcap: {FIXTURE_SUBJECT} leaked global state (*): {FIXTURE_WHAT}",
        "ERROR test_fixture_leak.py::test_uses_leaky - *TrtcapLeakError*",
    ])
    assert "INTERNALERROR" not in result.stdout.str()


def test_a_fixture_leak_reaches_the_controllers_summary_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(test_fixture_leak=FIXTURE_LEAK)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["leaks: 1 test(s) left global state changed (restored)",
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
