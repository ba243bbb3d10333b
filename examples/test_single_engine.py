"""A model that must compile to one TensorRT engine on every arm: its GEMMs use ``turing_safe_gemm_dtype``."""

import torch

from pytest_trtcap import assert_partition_counts, assert_servable_placements, assert_trt_close


def mlp(dtype: torch.dtype) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dtype)


def test_mlp_is_one_engine(partition, turing_safe_gemm_dtype, device):
    model = mlp(turing_safe_gemm_dtype).to(device)
    x = torch.randn(2, 16, dtype=turing_safe_gemm_dtype, device=device)
    assert_partition_counts(partition(model, x), (1, 0))


def test_fp32_mlp_splits_only_on_turing(partition, expected_partition_counts, device):
    model, x = mlp(torch.float32).to(device), torch.randn(2, 16, device=device)
    partitioned = partition(model, x)
    assert_partition_counts(partitioned, expected_partition_counts(default=(1, 0), turing=(1, 2)))
    assert_servable_placements(partitioned)
    assert_trt_close(partitioned(x), model(x))
