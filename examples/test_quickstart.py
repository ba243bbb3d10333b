import pytest
import torch
from torch_tensorrt.dynamo.conversion import dynamo_tensorrt_converter

from pytest_trtcap import assert_partition_counts


def mlp(dtype):
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dtype)


def test_one_engine_in_the_turing_safe_dtype(partition, turing_safe_gemm_dtype):  # float16 if Turing is a target
    x = torch.randn(2, 16, dtype=turing_safe_gemm_dtype)
    assert_partition_counts(partition(mlp(x.dtype), x), (1, 0))  # (TensorRT blocks, PyTorch blocks)


def test_fp32_linears_run_in_pytorch_on_turing(partition, expected_partition_counts):
    counts = expected_partition_counts(default=(1, 0), turing=(1, 2))
    assert_partition_counts(partition(mlp(torch.float32), torch.randn(2, 16)), counts)


@pytest.mark.trt_fp32_gemm  # skipped where a declared target cannot serve FP32 GEMMs
def test_fp32_mlp_is_one_engine(partition):
    assert_partition_counts(partition(mlp(torch.float32), torch.randn(2, 16)), (1, 0))


def test_leaves_a_converter_registered():  # the plugin names this test and removes the converter
    dynamo_tensorrt_converter(torch.ops.aten.relu.default)(lambda *_: None)
