"""Resource partitioning of a conv model whose head is an FP32 ``nn.Linear``.

On Turing the guard sends the Linear to PyTorch, so the block counts differ by arm: the expectation is
derived from the same predicate as the guard instead of being hard-coded for one GPU.
"""

import torch
from torch_tensorrt.dynamo.partitioning._resource_partitioner import resource_partition

from pytest_trtcap import assert_partition_counts, assert_servable_placements, assert_trt_close


class ConvHead(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).flatten(1))


def test_conv_model_ending_in_fp32_linear(partition, expected_partition_counts, device):
    model, x = ConvHead().to(device), torch.randn(2, 3, 8, 8, device=device)
    partitioned = resource_partition(partition(model, x).module, cpu_memory_budget=2**40)
    expected = expected_partition_counts(default=(1, 0), turing=(1, 1))
    assert_partition_counts(partitioned, expected)
    assert_servable_placements(partitioned)
    assert_trt_close(partitioned(x), model(x))
