"""Fused attention is one node: an FP32 one cannot run on Turing, an FP16 one must stay on TensorRT."""

import torch
import torch.nn.functional as F

from pytest_trtcap import assert_partition_counts, count_partitions


class Attention(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def qkv(dtype, device):
    return tuple(torch.randn(1, 2, 8, 16, dtype=dtype, device=device) for _ in range(3))


def cpu_lowering(device):
    """Before 2.12, attention exported on the CPU lowers to a CPU-only op that no converter serves: PyTorch."""
    return {"<2.12": {"default": (0, 1)}} if device.type == "cpu" else None


def test_fp32_attention_placement(partition, expected_partition_counts, device):
    partitioned = partition(Attention(), *qkv(torch.float32, device))
    expected = expected_partition_counts(default=(1, 0), turing=(0, 1), releases=cpu_lowering(device))
    assert_partition_counts(partitioned, expected)


def test_turing_safe_attention_stays_on_tensorrt(partition, turing_safe_gemm_dtype, expected_partition_counts, device):
    partitioned = partition(Attention(), *qkv(turing_safe_gemm_dtype, device))
    expected = expected_partition_counts(default=(1, 0), turing=(1, 0), releases=cpu_lowering(device))
    assert count_partitions(partitioned).acc == expected.acc
