"""Isolation of Torch-TensorRT's global state around every test, as a suite sees it.

Each scenario runs in a fresh process (``runpytest_subprocess``): the GPU-less import hook must arm before
``torch_tensorrt`` is first imported, and the registries under test are that process's own. Importing
torch_tensorrt costs seconds, so each run checks many things at once.
"""

from __future__ import annotations

import pytest




# --- one session with every kind of change ------------------------------------------------------------

USER_STATE = '''
"""State of the suite's own, held through the pytest_trtcap_isolated_state hook."""
CACHE = []
'''

ISOLATION_CONFTEST = '''
import user_state


def pytest_trtcap_isolated_state(config):
    def snapshot():
        return list(user_state.CACHE)

    def restore(saved):
        user_state.CACHE[:] = saved

    return [("user cache", snapshot, restore)]
'''

# torch_tensorrt is imported at collection by the test module itself: the plugin's import hook answers the
# device queries (no GPU here) and installs the guards.
ISOLATION_SUITE = '''
import unittest

import pytest
import torch
import torch_tensorrt.dynamo.partitioning._atomic_subgraphs as atomic_module
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (
    DYNAMO_ATEN_CONVERTERS,
    DYNAMO_CONVERTERS,
    dynamo_tensorrt_converter,
)
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

import trtcap_guards as guards
import user_state

aten = torch.ops.aten
BASE_ATOMIC = list(ATOMIC_SUBGRAPHS)
BASE_TARGETS = set(DYNAMO_ATEN_CONVERTERS)
MM, BMM = DYNAMO_ATEN_CONVERTERS[aten.mm.default], DYNAMO_ATEN_CONVERTERS[aten.bmm.default]
BASE_MM, BASE_BMM = list(MM), list(BMM)
assert aten.erfinv.default not in DYNAMO_ATEN_CONVERTERS


class ReLUConv(torch.nn.Module):
    def forward(self, x):
        return aten.relu.default(x)


class ReLUConvFail(ReLUConv):
    pass


class OptedOut(ReLUConv):
    pass


def fake_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


def assert_original_state():
    assert atomic_module.ATOMIC_SUBGRAPHS is ATOMIC_SUBGRAPHS  # restored in place, not rebound
    assert ATOMIC_SUBGRAPHS == BASE_ATOMIC
    assert set(DYNAMO_ATEN_CONVERTERS) == BASE_TARGETS
    assert DYNAMO_ATEN_CONVERTERS[aten.mm.default] is MM and MM == BASE_MM
    assert DYNAMO_ATEN_CONVERTERS[aten.bmm.default] is BMM and BMM == BASE_BMM
    assert any(r is DYNAMO_ATEN_CONVERTERS for r in DYNAMO_CONVERTERS.registries)


def test_01_leaks_an_atomic_subgraph():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)
    assert ATOMIC_SUBGRAPHS[-1] == (ReLUConv, (), True)


def test_02_sees_the_original_atomic_subgraphs():
    assert_original_state()


def test_03_leaks_a_converter():
    dynamo_tensorrt_converter(aten.mm.default)(fake_converter)
    dynamo_tensorrt_converter(aten.erfinv.default)(fake_converter)
    assert len(MM) == len(BASE_MM) + 1


def test_04_sees_the_original_registry():
    assert_original_state()


def test_05_fails_after_leaking():
    register_atomic_subgraph(init_args=(aten.relu.default,), is_core_aten=True)(ReLUConvFail)
    assert False, "failed before removing its atomic subgraph"


def test_06_raises_after_leaking():
    dynamo_tensorrt_converter(aten.bmm.default)(fake_converter)
    raise RuntimeError("raised before removing its converter")


def test_07_sees_the_original_state_after_a_failure_and_an_error():
    assert_original_state()


def test_08_changes_compilation_settings():
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(torch_executed_ops={aten.relu.default}))
    assert aten.relu.default in DYNAMO_CONVERTERS.disallowed_targets


def test_09_compilation_settings_restored_silently():
    assert not DYNAMO_CONVERTERS.disallowed_targets or aten.relu.default not in DYNAMO_CONVERTERS.disallowed_targets


def test_10_leaks_user_state():
    user_state.CACHE.append("compiled engine")


def test_11_sees_the_original_user_state():
    assert user_state.CACHE == []


@pytest.mark.trtcap_no_isolation
def test_12_opted_out_leaks_without_restore():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(OptedOut)


@pytest.mark.trtcap_no_isolation
def test_13_opted_out_change_was_kept():
    assert ATOMIC_SUBGRAPHS[-1] == (OptedOut, (), True)
    ATOMIC_SUBGRAPHS.remove((OptedOut, (), True))  # opted out too, so this removal is not a leak either


@pytest.fixture
def scoped_atomic_subgraph():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)
    yield
    ATOMIC_SUBGRAPHS.remove((ReLUConv, (), True))


def test_14_fixture_scoped_change_is_not_a_leak(scoped_atomic_subgraph):
    assert ATOMIC_SUBGRAPHS[-1] == (ReLUConv, (), True)


def test_15_guards_are_in_place_and_untouched():
    assert guards.is_installed()
    assert_original_state()


class TestUnittestIsolation(unittest.TestCase):
    def test_a_leaks(self):
        register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)

    def test_b_sees_the_original_state(self):
        assert_original_state()
'''


def test_isolation_restores_reports_and_names_each_leak(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(user_state=USER_STATE, test_isolation=ISOLATION_SUITE)
    pytester.makeconftest(ISOLATION_CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=15, failed=2, warnings=6)
    result.stdout.fnmatch_lines([
        "FAILED test_isolation.py::test_05_fails_after_leaking - AssertionError: failed before removing*",
        "FAILED test_isolation.py::test_06_raises_after_leaking - RuntimeError: raised before removing*",
    ])
    # one warning per leaking test, pointing at the test and saying what changed
    leaks = {
        "test_01_leaks_an_atomic_subgraph": "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)",
        "test_03_leaks_a_converter": "aten.erfinv.default: target added (1 converter); aten.mm.default: 1 converter added",
        "test_05_fails_after_leaking": "added ATOMIC_SUBGRAPHS entry (ReLUConvFail, (aten.relu.default,), True)",
        "test_06_raises_after_leaking": "aten.bmm.default: 1 converter added",
        "test_10_leaks_user_state": "user cache changed",
        "TestUnittestIsolation::test_a_leaks": "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)",
    }
    result.stdout.fnmatch_lines_random([
        f"*test_isolation.py:*: TrtcapLeakWarning: test_isolation.py::{test} leaked global state: {what}"
        for test, what in leaks.items()
    ])
    result.stdout.fnmatch_lines(
        ["*- trtcap -*", "leaks: 6 test(s) left global state changed (restored)"]
        + [f"  test_isolation.py::{test} -> {what}" for test, what in leaks.items()]
        + ["gpu-less import: applied (device queries answered with 8.9)"]
    )
    # settings changes are restored silently; opted-out and fixture-scoped changes are not leaks
    reported = [line for line in result.stdout.lines if "leaked global state" in line or " -> " in line]
    assert len(reported) == 2 * len(leaks)
    for quiet in ("test_08", "test_12", "test_13", "test_14", "OptedOut", "settings"):
        assert not [line for line in reported if quiet in line]


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
    result = cascade.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        f"FAILED {CASCADE_NODE} - AssertionError: Lists differ*",
        "FAILED test_resource_partitioning.py::TestResourcePartitioning::"
        "test_2_stock_atomic_subgraphs_leave_relu_add_unfused - AssertionError: Lists differ: ['add', 'relu'] != []",
    ])
    assert "trtcap" not in result.stdout.str()


def test_cascade_with_the_plugin_only_the_culprit_fails_and_is_named(cascade: pytest.Pytester) -> None:
    result = cascade.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
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
    result = cascade.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-strict", "-rfE", "-v")
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
