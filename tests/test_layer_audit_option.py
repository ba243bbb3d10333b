"""``--trtcap-audit-layers``: every TensorRT network Torch-TensorRT's interpreter builds during a run is read layer by
layer and judged, reported per test, an error under ``--trtcap-strict``, the interpreter put back after the session
(``pytest_trtcap.layer_audit``). Each run is a ``pytester`` suite driving the real interpreter, as Torch-TensorRT's
own converter tests do."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.usefixtures("tt")

CONFTEST = '''
import sys
import pytest
import torch_tensorrt  # module level, as real suites do

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    from torch_tensorrt.dynamo.conversion import TRTInterpreter
    print("INTERPRETER WRAPPED AFTER:", hasattr(TRTInterpreter._construct_trt_network_def, "__trtcap_audited__"))
    print("LAYER AUDIT LOADED:", "pytest_trtcap.layer_audit" in sys.modules)
'''

SUITE = '''
import numpy as np
import pytest
import tensorrt as trt
import torch
from torch_tensorrt import Input
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion import TRTInterpreter
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (
    DYNAMO_ATEN_CONVERTERS, ConverterPriority, dynamo_tensorrt_converter)
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

def lower(model, *inputs):
    settings = CompilationSettings(min_block_size=1)
    exported = torch.export.export(model.eval(), inputs).run_decompositions(get_decompositions(False))
    return post_lowering(exported.module(), settings)

def network(gm, *inputs):
    """What Torch-TensorRT's converter tests do: the interpreter on a graph, with inputs from tensors."""
    interpreter = TRTInterpreter(gm, [Input.from_tensor(t) for t in inputs],
                                 compilation_settings=CompilationSettings(min_block_size=1))
    interpreter._construct_trt_network_def()
    return interpreter.ctx.net

class Tanh(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x)

@pytest.fixture
def tanh_via_matmul():
    saved = list(DYNAMO_ATEN_CONVERTERS[torch.ops.aten.tanh.default])

    @dynamo_tensorrt_converter(torch.ops.aten.tanh.default, priority=ConverterPriority.HIGH)
    def convert(ctx, target, args, kwargs, name):
        x = args[0]
        eye = ctx.net.add_constant((x.shape[-1], x.shape[-1]), trt.Weights(np.eye(x.shape[-1], dtype=np.float32)))
        product = ctx.net.add_matrix_multiply(x, trt.MatrixOperation.NONE, eye.get_output(0),
                                              trt.MatrixOperation.NONE)
        return ctx.net.add_activation(product.get_output(0), trt.ActivationType.TANH).get_output(0)

    yield
    DYNAMO_ATEN_CONVERTERS[torch.ops.aten.tanh.default][:] = saved

def test_a_converter_with_a_hidden_matmul(tanh_via_matmul):
    x = torch.randn(4, 8)
    assert network(lower(Tanh(), x), x).num_layers >= 3

def test_fp32_linear():
    model, x = torch.nn.Linear(8, 4), torch.randn(2, 8)
    network(lower(model, x), x)

def test_fp16_linear():
    model, x = torch.nn.Linear(8, 4).half(), torch.randn(2, 8).half()
    network(lower(model, x), x)
'''

def literal(text: str) -> str:
    """``text`` as an fnmatch pattern that matches only itself where it holds brackets; ``*`` stays a wildcard."""
    return text.replace("[", "\x00").replace("]", "[]]").replace("\x00", "[[]")


HIDDEN = literal("    network 1: (Unnamed Layer* *) [Matrix Multiply] (aten.tanh.default) -> fp32_gemm: FP32 GEMM on "
                 "SM 7.5 [FLOAT, FLOAT, FLOAT]; no rule names this op")
LINEAR = literal("    network 1: [MATRIX_MULTIPLY]-[aten_ops.linear.default]-[*] (aten.linear.default) -> fp32_gemm: "
                 "FP32 GEMM on SM 7.5 [FLOAT, FLOAT, FLOAT]")


#: The FP32 linear is converted only with the guards off (at 7.5 they leave it no converter, as in a compile).
GUARDS_OFF = ("--trtcap-guards", "off")


def test_with_the_guards_on_the_fp32_linear_has_no_converter_and_the_hidden_matmul_is_still_found(suite):
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit-layers")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["layer audit: 2 network(s), 0 engine(s) read; 1 finding(s) in 1 test(s)",
                                 "  test_model.py::test_a_converter_with_a_hidden_matmul", HIDDEN])


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_model=SUITE)
    return pytester


def test_each_network_built_during_a_test_is_audited_and_reported_per_test(suite):
    result = suite.runpytest_subprocess("-p", "no:randomly", "-s", "--trt-target-sm", "7.5", "--trtcap-audit-layers",
                                        *GUARDS_OFF)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "trtcap: layer audit: on (from --trtcap-audit-layers)",
        "*- trtcap -*",
        "layer audit: 3 network(s), 0 engine(s) read; 2 finding(s) in 2 test(s)",
        "  test_model.py::test_a_converter_with_a_hidden_matmul",
        HIDDEN,
        "  test_model.py::test_fp32_linear",
        LINEAR,
        "INTERPRETER WRAPPED AFTER: False",
    ])
    assert "test_fp16_linear" not in result.stdout.str().split("- trtcap -")[-1]


def test_at_ada_the_networks_are_read_and_nothing_is_found(suite):
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "8.9", "--trtcap-audit-layers")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["layer audit: 3 network(s), 0 engine(s) read; nothing the declared targets cannot "
                                 "serve"])


def test_under_strict_a_finding_errors_its_test(suite):
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit-layers",
                                        "--trtcap-strict", *GUARDS_OFF)
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines([
        "*TrtcapAuditError: trtcap: test_model.py::test_a_converter_with_a_hidden_matmul gave TensorRT 1 layer(s) "
        "that the declared targets cannot serve (--trtcap-audit-layers, --trtcap-strict):",
    ])


@pytest.mark.parametrize("how", ["env", "ini"])
def test_the_environment_variable_and_the_ini_key_turn_it_on_and_the_header_names_them(suite, how, monkeypatch):
    if how == "env":
        monkeypatch.setenv("TRTCAP_AUDIT_LAYERS", "1")
        source = "TRTCAP_AUDIT_LAYERS"
    else:
        suite.makeini("[pytest]\ntrtcap_audit_layers = true\n")
        source = "ini trtcap_audit_layers"
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "-k", "fp32_linear",
                                        *GUARDS_OFF)
    result.stdout.fnmatch_lines([f"trtcap: layer audit: on (from {source})", "*- trtcap -*",
                                 "layer audit: 1 network(s), 0 engine(s) read; 1 finding(s) in 1 test(s)"])


def test_a_bad_value_is_a_usage_error_naming_the_variable(suite, monkeypatch):
    monkeypatch.setenv("TRTCAP_AUDIT_LAYERS", "maybe")
    result = suite.runpytest_subprocess("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "TRTCAP_AUDIT_LAYERS" in result.stderr.str() and "maybe" in result.stderr.str()


def test_without_it_nothing_is_wrapped_or_loaded(suite):
    result = suite.runpytest_subprocess("-p", "no:randomly", "-s", "--trt-target-sm", "7.5", *GUARDS_OFF)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["INTERPRETER WRAPPED AFTER: False", "LAYER AUDIT LOADED: False"])
    assert "layer audit" not in result.stdout.str()


def test_a_sweep_shows_the_findings_per_arm_counts_them_and_records_them(tmp_path):
    """``trtcap sweep --arms 7.5,8.9 -- --trtcap-audit-layers``: each arm's record carries each test's findings,
    the result counts them, and the text lists them by arm."""
    import io
    import json

    from runs_helpers import make_suite, trtcap

    suite = make_suite(tmp_path / "suite", {"conftest.py": CONFTEST, "test_model.py": SUITE})
    out = tmp_path / "out"
    proc = trtcap("sweep", "--arms", "7.5,8.9", "--out", out, "--format", "json", "--", "test_model.py",
                  "--trtcap-audit-layers", *GUARDS_OFF, "-p", "no:randomly", cwd=suite, timeout=300)
    result = json.loads(proc.stdout)
    assert result["totals"]["layer findings"] == 2
    by_arm = {a["arm"]: a["layer_findings"] for a in result["arms"]}
    assert sorted(by_arm["7.5"]) == ["test_model.py::test_a_converter_with_a_hidden_matmul",
                                     "test_model.py::test_fp32_linear"]
    assert by_arm["8.9"] == {}
    record = json.loads(next(out.glob("*7.5*.json")).read_text())
    hidden = record["tests"]["test_model.py::test_a_converter_with_a_hidden_matmul"]["layer_findings"]
    assert len(hidden) == 1 and "(aten.tanh.default) -> fp32_gemm" in hidden[0]
    assert "layer_findings" not in record["tests"]["test_model.py::test_fp16_linear"]
    from pytest_trtcap.runs import render

    text = io.StringIO()
    render.render(result, "markdown", text)
    assert "Layer audit findings" in text.getvalue()
    assert ("arm 7.5: 3 network(s), 0 engine(s) read, 2 finding(s) in 2 test(s); arm 8.9: 3 network(s), 0 engine(s) "
            "read, 0 finding(s) in 0 test(s)") in text.getvalue()
    assert record["tests"]["test_model.py::test_fp16_linear"]["layers_read"] == [1, 0]
    from pytest_trtcap.runs.sections import sweep_view

    verdict = sweep_view(result, 100).verdict.text
    assert verdict == "RESULT: COMPLETE: 2 arm(s), 0 arm-specific failure(s), 2 layer finding(s)"


CONVERTER_TEST_STYLE = '''
import torch
from torch_tensorrt import Input
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion import TRTInterpreter
from test_model import lower

def test_makes_an_interpreter_then_moves_its_inputs_to_cuda():
    """What Torch-TensorRT's converter harness does: on a host without a GPU it fails before it runs the interpreter."""
    model, x = torch.nn.Linear(8, 4), torch.randn(2, 8)
    interpreter = TRTInterpreter(lower(model, x), [Input.from_tensor(x)],
                                 compilation_settings=CompilationSettings(min_block_size=1))
    x.cuda()
    interpreter.run()
'''


def test_an_interpreter_a_test_made_but_never_ran_is_built_and_judged_when_the_test_ends(suite):
    suite.makepyfile(test_converter_style=CONVERTER_TEST_STYLE)
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit-layers",
                                        "--trtcap-needs-gpu", "skip", "test_converter_style.py", *GUARDS_OFF)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([
        "layer audit: 1 network(s), 0 engine(s) read; 1 finding(s) in 1 test(s)",
        "  test_converter_style.py::test_makes_an_interpreter_then_moves_its_inputs_to_cuda",
        literal("    network 1 (the test built none: built by the audit): [MATRIX_MULTIPLY]-[aten_ops.linear.default]-"
                "[*"),
    ])


PARTITIONING_SUITE = '''
import torch
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
from test_model import lower

def test_partitions_a_linear_and_a_relu():
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), torch.randn(2, 8)
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(min_block_size=1))
    partitioned, _ = partitioning.fast_partition(lower(model, x), min_block_size=1)
    torch.testing.assert_close(partitioned(x), model(x))
'''


def test_each_partition_the_suite_makes_has_its_tensorrt_blocks_networks_read(suite):
    """The partition level: a suite that only partitions (never converts) still has each block's network read."""
    suite.makepyfile(test_partitioning=PARTITIONING_SUITE)
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit-layers",
                                        "test_partitioning.py", *GUARDS_OFF)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "layer audit: 1 network(s), 0 engine(s) read; 1 finding(s) in 1 test(s)",
        "  test_partitioning.py::test_partitions_a_linear_and_a_relu",
        literal("    partition 1: _run_on_acc_0: [MATRIX_MULTIPLY]-[aten_ops.linear.default]-[*] (aten.linear.default) "
                "-> fp32_gemm: FP32 GEMM on SM 7.5 [FLOAT, FLOAT, FLOAT]"),
    ])


COMPILE_PATH_SUITE = '''
import torch
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion import TRTInterpreter
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs
from test_model import lower

def test_partitions_then_converts_each_block_as_compile_does():
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), torch.randn(2, 8)
    settings = CompilationSettings(min_block_size=1)
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    partitioned, _ = partitioning.fast_partition(lower(model, x), min_block_size=1)
    block = partitioned._run_on_acc_0
    TRTInterpreter(block, construct_submodule_inputs(block), compilation_settings=settings)._construct_trt_network_def()
'''


def test_a_block_read_from_its_partition_is_not_read_again_when_it_is_converted(suite):
    """Compile's path: each block of the partition is converted by the interpreter; its network was read already."""
    suite.makepyfile(test_compile_path=COMPILE_PATH_SUITE)
    result = suite.runpytest_subprocess("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-audit-layers",
                                        "test_compile_path.py", *GUARDS_OFF)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["layer audit: 1 network(s), 0 engine(s) read; 1 finding(s) in 1 test(s)"])
