"""``--trtcap-audit``: every partition Torch-TensorRT produces during a run is audited and reported per test, an
error under ``--trtcap-strict``, the partitioner entry points put back after the session
(``pytest_trtcap.audit``). Each run is a ``pytester`` suite on the real export, lowering and partitioners."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("tt")

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


def test_a_partition_too_small_for_any_tensorrt_block_is_audited_as_nothing_on_tensorrt(suite):
    """The global partitioner hands back the graph itself, with no block, when no run of supported nodes reaches
    ``min_block_size``: its linears run in PyTorch, and the audit of what the partitioner placed finds nothing."""
    suite.makepyfile(test_model=SUITE.replace("partitioning.fast_partition(lower(model, x), min_block_size=1)",
                                              "partitioning.global_partition(lower(model, x), min_block_size=50)"))
    result = suite.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                             "--trtcap-audit")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*- trtcap -*", "placement audit: 1 partition(s) audited; no unservable placements"])


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


FP32_ACC_SUITE = '''
import torch
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

def test_fp16_linear_with_fp32_accumulation():
    model, x = torch.nn.Linear(8, 4).half().eval(), torch.randn(2, 8).half()
    settings = CompilationSettings(min_block_size=1, use_fp32_acc={acc})
    exported = torch.export.export(model, (x,)).run_decompositions(get_decompositions(False))
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    partitioning.fast_partition(post_lowering(exported.module(), settings), min_block_size=1)
'''


@pytest.mark.parametrize("acc", [True, False])
def test_the_audit_reads_the_settings_the_partitioner_was_given(pytester, acc):
    """With ``use_fp32_acc`` on, Torch-TensorRT runs an FP16 GEMM as FP32: the audit reads the settings the
    converter registry holds for that partition, as the validators do, and reports the linear only then."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_acc=FP32_ACC_SUITE.replace("{acc}", str(acc)))
    result = pytester.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                                "--trtcap-audit")
    result.assert_outcomes(passed=1)
    if acc:
        result.stdout.fnmatch_lines([
            "placement audit: 1 partition(s) audited; 1 unservable placement(s) in 1 test(s)",
            "    _run_on_acc_0: linear (aten.linear.default) -> fp32_acc_gemm: FP32 GEMM on SM 7.5",
        ])
    else:
        result.stdout.fnmatch_lines(["placement audit: 1 partition(s) audited; no unservable placements"])


FIXTURE_SUITE = '''
import torch

def test_fp32_mlp(partition):
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    module, counts = partition(model, torch.randn(2, 16))
    assert counts == (1, 0)  # the guards are off: the whole MLP went to TensorRT
'''


def test_the_plugins_partition_fixture_is_audited_with_no_conftest(pytester: pytest.Pytester):
    """``partition`` comes from the plugin (no conftest defines it), and what it partitions is audited like any
    partition Torch-TensorRT makes: both FP32 linears on TensorRT at 7.5 with the guards off."""
    pytester.makepyfile(test_model=FIXTURE_SUITE)
    result = pytester.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                                "--trtcap-audit")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "placement audit: 1 partition(s) audited; 2 unservable placement(s) in 1 test(s)",
        "  test_model.py::test_fp32_mlp",
        "    _run_on_acc_0: linear (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        "    _run_on_acc_0: linear_1 (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
    ])
