"""Models and the export -> lower -> partition pipeline shared by the lane suite's modules.

The pipeline is the one Torch-TensorRT's resource-partitioning tests spell out in every test:
``torch.export`` -> ``pre_export_lowering`` -> ATen decompositions -> ``post_lowering`` -> a capability
partitioner (``fast_partition`` or ``global_partition``) -> ``resource_partition``. Nothing here needs a GPU.
"""

import gc
from typing import Any, List, Optional

import psutil
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch_tensorrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)
from torch.ops import aten
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo.conversion import CompilationSettings
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering, pre_export_lowering
from torch_tensorrt.dynamo.partitioning._resource_partitioner import resource_partition

CHANNELS = 512  # one 3x3 conv weight is 512*512*9*4 bytes = 9 MiB
MiB = 1024 * 1024
#: Per-engine budget: below one conv's weights, so each conv-bn-relu group becomes its own engine.
PER_ENGINE_BUDGET = 4 * MiB


class ConvNet(nn.Module):
    """Two [conv-bn-relu, conv-bn-relu, max_pool] stages, optionally ending in ``nn.Linear`` (FP32 by default)."""

    def __init__(self, linear_head: bool = True, head_dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        c = CHANNELS
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv3, self.bn3 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.conv4, self.bn4 = nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c)
        self.fc: Optional[nn.Linear] = nn.Linear(c * 2 * 2, 10).to(head_dtype) if linear_head else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.max_pool2d(x, (2, 2))
        x = F.relu(self.bn3(self.conv3(x)))
        x = F.relu(self.bn4(self.conv4(x)))
        x = F.max_pool2d(x, (2, 2))
        if self.fc is None:
            return x
        x = torch.flatten(x, 1).to(self.fc.weight.dtype)
        return self.fc(x)


class ReLUConv(nn.Module):
    """An atomic subgraph: a ReLU feeding a convolution may not be split across engines."""

    def forward(
        self,
        x: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor,
        stride: List[int],
        padding: List[int],
        dilation: List[int],
        transposed: bool,
        output_padding: List[int],
        groups: int,
    ) -> torch.Tensor:
        x = aten.relu.default(x)
        return aten.convolution.default(x, weight, bias, stride, padding, dilation, transposed, output_padding, groups)


def example_inputs() -> List[torch.Tensor]:
    return [torch.randn((1, CHANNELS, 8, 8))]


def settings() -> CompilationSettings:
    return CompilationSettings(
        min_block_size=1,
        immutable_weights=True,
        reuse_cached_engines=False,
        torch_executed_ops={"torch.ops.aten.max_pool2d.default"},
        enable_resource_partitioning=True,
    )


def lower(model: nn.Module, inputs: List[torch.Tensor], cs: CompilationSettings) -> torch.fx.GraphModule:
    exported = torch.export.export(model.eval(), tuple(inputs))
    exported = pre_export_lowering(exported, cs)
    exported = exported.run_decompositions(get_decompositions(False))
    return post_lowering(exported.module(), cs)


def cpu_memory_budget(per_engine: int = PER_ENGINE_BUDGET) -> int:
    """A ``cpu_memory_budget`` that leaves ``per_engine`` bytes per engine.

    The resource partitioner subtracts the process's resident memory from the budget and divides what is left
    by 4 (ENGINE_COMPILATION_MEMORY_USAGE_MULTIPLIER); Torch-TensorRT's tests hard-code gigabytes for a GPU
    host, this suite states the per-engine budget so the split points do not depend on the host.

    Garbage is collected first: a previous model's weights (36 MiB) freed by the cycle collector between this
    measurement and the partitioner's own would otherwise leave it 9x the budget, and the split points would
    depend on when the collector happens to run.
    """
    gc.collect()
    return psutil.Process().memory_info().rss + 4 * per_engine


def partition(model: nn.Module, use_global_partitioner: bool = False) -> torch.fx.GraphModule:
    """Capability partitioning, then resource partitioning, as ``enable_resource_partitioning=True`` does."""
    cs = settings()
    gm = lower(model, example_inputs(), cs)
    if use_global_partitioner:
        partitioned, _ = partitioning.global_partition(
            gm,
            min_block_size=cs.min_block_size,
            torch_executed_ops=cs.torch_executed_ops,
            require_full_compilation=cs.require_full_compilation,
        )
    else:
        partitioned, _ = partitioning.fast_partition(
            gm,
            min_block_size=cs.min_block_size,
            torch_executed_ops=cs.torch_executed_ops,
            require_full_compilation=cs.require_full_compilation,
            skip_fusion=True,
        )
    # The partitioner reads the process's resident memory once per accelerated block: garbage from export and
    # lowering collected between two reads (tens of MiB of weights) would move the split points. Collect it
    # first and keep the collector off while the blocks are measured, so the budget is what this suite states.
    gc.collect()
    gc.disable()
    try:
        return resource_partition(partitioned, cpu_memory_budget=cpu_memory_budget())
    finally:
        gc.enable()


def block_names(module: Any, prefix: str) -> List[str]:
    return [name for name, _ in module.named_children() if prefix in name]


def blocks(module: Any) -> str:
    """Each ``_run_on_*`` block with its ops, for assertion messages."""
    out = []
    for name, child in module.named_children():
        if "_run_on_" in name:
            ops = [str(n.target) for n in child.graph.nodes if n.op == "call_function"]
            out.append(f"{name}: {', '.join(ops)}")
    return "\n".join(out)
