"""The real export -> lower -> partition path for the plugin's self-tests (copied into pytester suites too).

``[Linear, ReLU, Linear]`` in FP32 partitions into ``_run_on_gpu_0, _run_on_acc_1, _run_on_gpu_2`` when the
guards are installed for SM 7.5, and into one ``_run_on_acc_0`` block otherwise (or in FP16).
Exports are cached per dtype (the slow part); every partition works on a deep copy of the lowered graph.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

import trtcap_guards as guards


class MLP(torch.nn.Module):
    """[Linear, ReLU, Linear]."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


_lowered: dict[torch.dtype, tuple[Any, torch.nn.Module, torch.Tensor]] = {}


def lowered(dtype: torch.dtype = torch.float32) -> tuple[Any, torch.nn.Module, torch.Tensor]:
    """torch.export + Torch-TensorRT's decompositions + post_lowering, once per dtype."""
    guards.import_torch_tensorrt()
    from torch_tensorrt.dynamo._settings import CompilationSettings
    from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

    if dtype not in _lowered:
        torch.manual_seed(0)
        model = MLP().eval().to(dtype)
        x = torch.randn(2, 8, dtype=dtype)
        ep = torch.export.export(model, (x,)).run_decompositions(get_decompositions(False))
        _lowered[dtype] = (post_lowering(ep.module(), CompilationSettings(min_block_size=1)), model, x)
    return _lowered[dtype]


def partition(dtype: torch.dtype = torch.float32) -> tuple[Any, torch.nn.Module, torch.Tensor]:
    """``fast_partition`` against the live (possibly guarded) registry: (partitioned module, model, input)."""
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo._settings import CompilationSettings
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    gm, model, x = lowered(dtype)
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(min_block_size=1))
    pm, _ = partitioning.fast_partition(copy.deepcopy(gm), min_block_size=1)
    return pm, model, x
