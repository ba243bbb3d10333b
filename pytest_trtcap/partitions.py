"""Partition-count expectations keyed off the same predicate as the guards."""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional, Tuple, Union

import trtcap_guards as guards
from trtcap_guards.capabilities import int_pair

from .text import one_line

ACC_PREFIX = "_run_on_acc"
GPU_PREFIX = "_run_on_gpu"


class PartitionCounts(NamedTuple):
    """TensorRT (``_run_on_acc*``) and PyTorch (``_run_on_gpu*``) blocks of a partitioned module."""

    acc: int
    gpu: int


def _counts(value: Union[PartitionCounts, Tuple[int, int]], name: str) -> PartitionCounts:
    pair = int_pair(value) if isinstance(value, tuple) else None
    if pair is None:
        raise ValueError(f"{name}: expected (acc, gpu) non-negative integers, got {value!r}")
    return PartitionCounts(*pair)


def expected_partition_counts(
    default: Union[PartitionCounts, Tuple[int, int]],
    turing: Optional[Union[PartitionCounts, Tuple[int, int]]] = None,
    settings: Any = None,
) -> PartitionCounts:
    """``turing`` when the build targets Turing on TensorRT-RTX, else ``default``."""
    chosen = _counts(default, "default")
    if turing is not None:
        turing_counts = _counts(turing, "turing")  # checked on every target, not only on Turing runs
        if guards.trt_rtx_targets_turing(settings):
            chosen = turing_counts
    return chosen


def _blocks(module: Any) -> List[Tuple[str, Any]]:
    return [(n, c) for n, c in module.named_children() if n.startswith((ACC_PREFIX, GPU_PREFIX))]


def count_partitions(module: Any) -> PartitionCounts:
    """Count the ``_run_on_acc*`` and ``_run_on_gpu*`` children of a partitioned module."""
    names = [n for n, _ in _blocks(module)]
    return PartitionCounts(sum(n.startswith(ACC_PREFIX) for n in names), sum(n.startswith(GPU_PREFIX) for n in names))


def describe_partitions(module: Any) -> str:
    lines = []
    for name, child in _blocks(module):
        graph = getattr(child, "graph", None)
        ops = [str(n.target) for n in graph.nodes if n.op == "call_function"] if graph is not None else []
        lines.append(f"  {name}: {', '.join(ops) or '(no call_function nodes)'}")
    return "\n".join(lines) or "  (no partitions)"


def assert_partition_counts(
    module: Any, expected: Union[PartitionCounts, Tuple[int, int]], settings: Any = None
) -> None:
    """Assert the block counts; the failure lists each block's nodes and the predicate's decision."""
    expected = _counts(expected, "expected")
    actual = count_partitions(module)
    if actual != expected:
        decision = guards.capability_decision(settings)
        raise AssertionError(
            f"partition counts {tuple(actual)} != expected {tuple(expected)} (acc, gpu)\n"
            f"blocks:\n{describe_partitions(module)}\n"
            f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"
        )
