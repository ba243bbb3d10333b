"""The placement audit: nodes Torch-TensorRT's partitioners put on TensorRT that the declared targets cannot serve,
judged from the nodes themselves (not the registry's validators). Real export, lowering and partitioners."""

from __future__ import annotations

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards
from pytest_trtcap import UnservablePlacement, assert_servable_placements, unservable_placements

pytestmark = pytest.mark.usefixtures("tt")

LINEAR = "aten.linear.default"
ASYM = "tensorrt.conv_asym_pad.default"


def mlp_partitioned() -> torch.fx.GraphModule:
    return tm.partition(tm.lowered_mlp())


def test_guards_off_at_turing_lists_each_fp32_linear(targets):
    targets("7.5")
    assert unservable_placements(mlp_partitioned()) == [
        UnservablePlacement("_run_on_acc_0", "linear", LINEAR, "fp32_gemm"),
        UnservablePlacement("_run_on_acc_0", "linear_1", LINEAR, "fp32_gemm"),
    ]


def test_guards_on_at_turing_nothing(targets, guarded):
    targets("7.5")
    pm = mlp_partitioned()
    assert tm.placement(pm)["gpu"] == [LINEAR, LINEAR]  # the guards moved them: nothing left to find
    assert unservable_placements(pm) == []
    assert_servable_placements(pm)


def test_at_ada_nothing(targets):
    targets("8.9")
    assert unservable_placements(mlp_partitioned()) == []


def test_fp16_at_turing_nothing(targets):
    targets("7.5")
    assert unservable_placements(tm.partition(tm.lowered_mlp(torch.float16))) == []


def test_independent_of_the_validators(targets, guarded):
    """A guard switched off (or a target no validator knows) is still caught: the audit reads the node itself."""
    targets("7.5")
    with guards.neutralize(LINEAR):
        found = unservable_placements(mlp_partitioned())
    assert [(p.node, p.rule) for p in found] == [("linear", "fp32_gemm"), ("linear_1", "fp32_gemm")]


def test_the_fused_asymmetric_pad_conv3d_is_caught_without_guards(targets):
    from test_guards_conv_asym_pad import pad_conv_graph

    targets("7.5")
    (found,) = unservable_placements(tm.partition(pad_conv_graph(3)))
    assert (found.op, found.rule) == (ASYM, "conv3d")
    assert unservable_placements(tm.partition(pad_conv_graph(2))) == []


def test_global_partition_blocks_are_audited_too(targets):
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    pm, _ = partitioning.global_partition(tm.lowered_mlp(), min_block_size=1)
    assert [p.op for p in unservable_placements(pm)] == [LINEAR, LINEAR]


def test_assert_servable_placements_lists_them_with_the_decision(targets):
    targets("7.5")
    with pytest.raises(AssertionError) as info:
        assert_servable_placements(mlp_partitioned())
    assert str(info.value).splitlines() == [
        "2 node(s) placed on TensorRT that the declared targets cannot serve:",
        "  _run_on_acc_0: linear (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        "  _run_on_acc_0: linear_1 (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        "trtcap: targets Turing on TensorRT-RTX = True: " + guards.capability_decision().reason,
    ]


@pytest.mark.parametrize("module", [torch.nn.Linear(2, 2), torch.fx.symbolic_trace(torch.nn.ReLU())])
def test_a_module_without_acc_blocks_has_nothing_to_find(module, targets):
    targets("7.5")
    assert unservable_placements(module) == []


@pytest.mark.parametrize("value", [object(), None, "abc", 42])
def test_what_is_no_module_is_refused_not_passed(value, targets):
    targets("7.5")
    with pytest.raises(TypeError, match=r"unservable_placements: expected the torch\.nn\.Module a Torch-TensorRT"):
        unservable_placements(value)
    with pytest.raises(TypeError):
        assert_servable_placements(value)


def test_a_partitioners_tuple_left_unpacked_is_refused_with_a_hint(targets):
    """fast_partition returns (module, ...): forgetting to unpack it must not make the check pass."""
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    result = partitioning.fast_partition(tm.lowered_mlp(), min_block_size=1)
    assert isinstance(result, tuple)
    with pytest.raises(TypeError, match=r"got a tuple: unpack the partitioner's result"):
        assert_servable_placements(result)


# --- the plugin: --trtcap-audit -----------------------------------------------------------------------------

CONFTEST = "import torch_tensorrt  # module level, as real suites do\n"

SUITE = '''
import torch
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

def lower(model, *inputs):
    settings = CompilationSettings(min_block_size=1)
    exported = torch.export.export(model.eval(), inputs).run_decompositions(get_decompositions(False))
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    return post_lowering(exported.module(), settings)

class ConvHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.head = torch.nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))

def test_conv_model_ending_in_fp32_linear():
    model, x = ConvHead(), torch.randn(2, 3, 4, 4)
    partitioned, _ = partitioning.fast_partition(lower(model, x), min_block_size=1)
    torch.testing.assert_close(partitioned(x), model(x))

def test_no_partition():
    pass
'''

CAUGHT = "    _run_on_acc_0: linear (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_model=SUITE)
    return pytester


def test_plugin_audit_catches_the_linear_with_guards_off_at_turing(suite):
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off", "--trtcap-audit")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "trtcap: placement audit: on (from --trtcap-audit)",
        "*- trtcap -*",
        "placement audit: 1 partition(s) audited; 1 unservable placement(s) in 1 test(s)",
        "  test_model.py::test_conv_model_ending_in_fp32_linear",
        CAUGHT,
    ])


@pytest.mark.parametrize("args", [["--trt-target-sm", "7.5"], ["--trt-target-sm", "8.9", "--trtcap-guards", "off"]],
                         ids=["guards-on-7.5", "guards-off-8.9"])
def test_plugin_audit_finds_nothing_with_guards_on_or_at_ada(suite, args):
    result = suite.runpytest("-p", "no:randomly", "--trtcap-audit", *args)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*- trtcap -*", "placement audit: 1 partition(s) audited; no unservable placements"])
    assert "unservable placement(s)" not in result.stdout.str()


def test_plugin_audit_is_an_error_under_strict(suite):
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                             "--trtcap-audit", "--trtcap-strict", "-vv")  # -vv: the ERROR line whole at any width
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*TrtcapAuditError: trtcap: test_model.py::test_conv_model_ending_in_fp32_linear placed 1 node(s) on "
        "TensorRT that the declared targets cannot serve (--trtcap-audit, --trtcap-strict):",
        "*" + CAUGHT.strip(),
        "ERROR test_model.py::test_conv_model_ending_in_fp32_linear - *TrtcapAuditError*",
    ])


@pytest.mark.parametrize("env, ini, source", [("1", None, "TRTCAP_AUDIT"), (None, "true", "ini trtcap_audit"),
                                              ("0", "true", None)])
def test_audit_setting_from_environment_and_ini(suite, monkeypatch, env, ini, source):
    if env is not None:
        monkeypatch.setenv("TRTCAP_AUDIT", env)
    if ini is not None:
        suite.makeini(f"[pytest]\ntrtcap_audit = {ini}\n")
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off")
    result.assert_outcomes(passed=2)
    if source is None:  # the environment's "0" wins over the ini file
        assert "placement audit" not in result.stdout.str()
    else:
        result.stdout.fnmatch_lines([f"trtcap: placement audit: on (from {source})", "*- trtcap -*", CAUGHT])


def test_audit_off_by_default_and_entry_points_restored_after_the_session(suite):
    from torch_tensorrt.dynamo import partitioning

    before = (partitioning.fast_partition, partitioning.global_partition)
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off")
    result.assert_outcomes(passed=2)
    assert "placement audit" not in result.stdout.str()
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit")
    result.assert_outcomes(passed=2)
    assert (partitioning.fast_partition, partitioning.global_partition) == before


def test_plugin_audit_under_xdist(suite):
    pytest.importorskip("xdist")
    result = suite.runpytest_subprocess("-p", "no:randomly", "-n", "2", "--trt-target-sm", "7.5",
                                        "--trtcap-guards", "off", "--trtcap-audit")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*- trtcap -*",
                                 "placement audit: 1 partition(s) audited; 1 unservable placement(s) in 1 test(s)",
                                 CAUGHT])


def test_session_end_leaves_an_entry_point_replaced_during_the_run_alone(pytester, tt):
    from torch_tensorrt.dynamo import partitioning

    original = partitioning.fast_partition
    pytester.makepyfile(test_replace='''
from torch_tensorrt.dynamo import partitioning

def replacement(*args, **kwargs):
    raise AssertionError("never called")

def test_replace():
    partitioning.fast_partition = replacement
''')
    try:
        result = pytester.runpytest("-p", "no:randomly", "--trtcap-audit")
        result.assert_outcomes(passed=1)
        assert partitioning.fast_partition.__name__ == "replacement"
    finally:
        partitioning.fast_partition = original


UNITTEST_SUITE = SUITE.split("def test_conv_model_ending_in_fp32_linear")[0] + '''
import unittest

class TestConvHead(unittest.TestCase):
    def test_partition(self):
        model, x = ConvHead(), torch.randn(2, 3, 4, 4)
        partitioned, _ = partitioning.fast_partition(lower(model, x), min_block_size=1)
        self.assertEqual(partitioned(x).shape, (2, 10))
'''


def test_plugin_audit_attributes_unittest_tests(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_unit=UNITTEST_SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                                "--trtcap-audit", "-W", "error::pytest.PytestWarning")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*- trtcap -*", "placement audit: 1 partition(s) audited; 1 unservable*",
                                 "  test_unit.py::TestConvHead::test_partition", CAUGHT])


def test_partitions_made_outside_any_test_are_listed_as_such(pytester):
    pytester.makeconftest(CONFTEST)
    module_level = SUITE.split("def test_conv_model_ending_in_fp32_linear")[0] + '''
PARTITIONED, _ = partitioning.fast_partition(lower(ConvHead(), torch.randn(2, 3, 4, 4)), min_block_size=1)

def test_uses_it():
    assert PARTITIONED is not None
'''
    pytester.makepyfile(test_module_level=module_level)
    result = pytester.runpytest(
        "-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off", "--trtcap-audit"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["placement audit: 1 partition(s) audited; 1 unservable*", "  (outside tests)", CAUGHT])
