"""Under pytest-xdist each worker holds and restores its own process state; the controller's summary is
built from the reports (and the workers' output), so skips, leaks, fired guards and the GPU-less import are
still reported, and the leak warnings still reach the warnings summary."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("xdist")

RECIPE = Path(__file__).with_name("plugin_recipe.py")



# One file per worker (--dist loadfile): each leaks, then checks that its own process was restored.
ATOMIC_FILE = """
import pytest
import torch
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

BASE = list(ATOMIC_SUBGRAPHS)


class WorkerPattern(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten.relu.default(x)


def test_1_leaks_an_atomic_subgraph():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(WorkerPattern)


def test_2_this_worker_was_restored():
    assert ATOMIC_SUBGRAPHS == BASE


@pytest.mark.trt_fp32_gemm
def test_3_gemm():
    pass


@pytest.mark.trt_conv3d
def test_4_conv3d():
    pass


def test_5_guards_fire_in_this_worker_too():
    import plugin_recipe

    pm, _, _ = plugin_recipe.partition()
    assert len([n for n, _ in pm.named_children() if n.startswith("_run_on_gpu")]) == 2
"""

CONVERTER_FILE = """
import pytest
import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS, dynamo_tensorrt_converter

import plugin_recipe
from pytest_trtcap import assert_partition_counts

BASE = list(DYNAMO_ATEN_CONVERTERS[torch.ops.aten.mm.default])


def test_1_leaks_a_converter():
    dynamo_tensorrt_converter(torch.ops.aten.mm.default)(lambda ctx, target, args, kwargs, name: None)


def test_2_this_worker_was_restored():
    assert DYNAMO_ATEN_CONVERTERS[torch.ops.aten.mm.default] == BASE


def test_3_guards_fire_in_the_worker():
    pm, _, _ = plugin_recipe.partition()
    assert_partition_counts(pm, (1, 2))


@pytest.mark.trt_fp32_gemm
def test_4_gemm():
    pass
"""


def test_two_workers_isolate_and_the_controller_reports(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_atomic=ATOMIC_FILE, test_converter=CONVERTER_FILE, plugin_recipe=RECIPE.read_text())
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--dist", "loadfile", "-rs", "--trt-target-sm", "7.5",
    )
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=6, skipped=3, warnings=2)
    result.stdout.fnmatch_lines([
        "trtcap: targets: 7.5 (from --trt-target-sm); backend: rtx (detected); targets Turing on TensorRT-RTX: yes; "
        "guards: on (default; installed when torch_tensorrt is imported)",
        "created: 2/2 workers",
    ])
    result.stdout.fnmatch_lines_random([
        "*TrtcapLeakWarning: test_atomic.py::test_1_leaks_an_atomic_subgraph leaked global state: "
        "added ATOMIC_SUBGRAPHS entry (WorkerPattern, (), True)",
        "*TrtcapLeakWarning: test_converter.py::test_1_leaks_a_converter leaked global state: "
        "aten.mm.default: 1 converter added",
        "SKIPPED [[]1[]] test_atomic.py:*: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 "
        "(targets 7.5 from --trt-target-sm)",
        "SKIPPED [[]1[]] test_atomic.py:*: trtcap: TensorRT-RTX cannot serve 3D convolution on SM 7.5 "
        "(targets 7.5 from --trt-target-sm)",
        "SKIPPED [[]1[]] test_converter.py:*: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 "
        "(targets 7.5 from --trt-target-sm)",
    ])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "capability skips: 3 (trt_conv3d: 1, trt_fp32_gemm: 2)",
        "leaks: 2 tests left global state changed (restored)",
    ])
    result.stdout.fnmatch_lines_random([
        "  test_atomic.py::test_1_leaks_an_atomic_subgraph -> added ATOMIC_SUBGRAPHS entry (WorkerPattern, (), True)",
        "  test_converter.py::test_1_leaks_a_converter -> aten.mm.default: 1 converter added",
        "guards fired: fp32_gemm on aten.linear.default x4",  # two per worker, summed
        "gpu-less import: applied (device queries answered with 7.5)",
    ])
