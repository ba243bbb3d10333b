"""A causal 3D convolution, as video models write it: the model pads itself (two frames before, none after).

Torch-TensorRT's own lowering fuses the pad into the convolution (``tensorrt.conv_asym_pad``), a node no
``aten.convolution`` guard would see. The test checks what a CPU lane can check (placement: nothing on TensorRT
that the targets cannot serve) and compares with eager the way a GPU runner should, with ``assert_trt_close``,
which names an all-zero output instead of reporting a numeric mismatch.
"""

import torch
import torch.nn.functional as F

from pytest_trtcap import assert_partition_counts, assert_servable_placements, assert_trt_close


class CausalConv3d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, 3)

    def forward(self, video: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(F.pad(video, (1, 1, 1, 1, 2, 0))))


def test_causal_conv3d_placement_and_output(partition, expected_partition_counts, device):
    model, video = CausalConv3d().eval().to(device), torch.randn(1, 3, 4, 8, 8, device=device)
    partitioned = partition(model, video)
    assert_servable_placements(partitioned)
    # Before 2.14 the pad is not fused into the convolution: at 7.5 it is a TensorRT block of its own.
    expected = expected_partition_counts(default=(1, 0), turing=(1, 1), releases={"<2.14": {"turing": (2, 1)}})
    assert_partition_counts(partitioned, expected)
    with torch.no_grad():
        assert_trt_close(partitioned.module(video), model(video))
