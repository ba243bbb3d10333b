"""Benchmark: what a network audit (``--trtcap-audit-layers`` at the partition level) adds per partition.

The graph of ``bench_partition`` (a stack of FP16 blocks: four ``nn.Linear``, fused attention, ReLU, residual) is
exported and lowered as ``torch_tensorrt.dynamo.compile`` does, targets declared 7.5 (so every rule applies and the
audit judges every layer; FP16, so it finds nothing). Each round partitions a fresh deep copy with
``partitioning.fast_partition(gm, min_block_size=1)`` and then audits the partition with
``pytest_trtcap.unservable_layers`` (each TensorRT block's network built by Torch-TensorRT's interpreter and read):
the audit's CPU time against the partition's, both single-threaded Python, measured back to back in the same round.
For information (no target): the audit builds what the conversion would build anyway, minus the engine.

    python bench/bench_layer_audit.py [--quick] [--blocks N] [--runs N]
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, median, paired_median, per_round, spread


def audit_round(gm: Any) -> tuple[float, float, int, int]:
    """(partition CPU s, audit CPU s, TensorRT blocks, layers read) for one fresh copy."""
    from torch_tensorrt.dynamo import partitioning

    from pytest_trtcap import layers

    work = copy.deepcopy(gm)
    gc.collect()
    cpu = time.process_time()
    partitioned, _ = partitioning.fast_partition(work, min_block_size=1)
    partition_s = time.process_time() - cpu
    gc.collect()
    cpu = time.process_time()
    found = layers.unservable_layers(partitioned)
    audit_s = time.process_time() - cpu
    assert found == [], found  # FP16 at 7.5: nothing to find (a finding here would be a misclassification)
    blocks = layers.tensorrt_blocks(partitioned)
    read = sum(len(layers.network_of_block(b)) for _, b in blocks)  # untimed: how many layers the audit read
    return partition_s, audit_s, len(blocks), read


def run(quick: bool = False, blocks: int = 0, runs: int = 0) -> list[Result]:
    from bench_partition import build_graph

    import trtcap_guards as guards

    blocks = blocks or (2 if quick else 30)
    runs = runs or (2 if quick else 11)
    gm, settings, build_s = build_graph(blocks)
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    calls = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    banner(f"network audit per partition: {blocks} FP16 blocks ({calls} call_function nodes), {runs} rounds")
    previous = (DYNAMO_CONVERTERS.compilation_settings, DYNAMO_CONVERTERS.disallowed_targets)
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    partition: list[float] = []
    audit: list[float] = []
    shape = (0, 0)
    try:
        with guards.declare_targets("7.5", origin="bench"):
            audit_round(gm)  # warm-up: the converters' first calls import and cache
            for _ in range(runs):
                partition_s, audit_s, n_blocks, n_layers = audit_round(gm)
                partition.append(partition_s)
                audit.append(audit_s)
                shape = (n_blocks, n_layers)
    finally:
        DYNAMO_CONVERTERS.compilation_settings, DYNAMO_CONVERTERS.disallowed_targets = previous
    print(f"export + lowering {build_s:.1f} s; {shape[0]} TensorRT block(s), {shape[1]} layers read per partition")
    print(f"partition CPU {spread(partition)} s, audit CPU {spread(audit)} s")
    result = Result(
        "layer_audit_per_partition",
        f"network audit of one partition ({calls} call_function nodes, {shape[0]} TensorRT block(s), {shape[1]} "
        "layers), targets 7.5, CPU time, against fast_partition's",
        median(audit), median(partition), "s", target=None, checked=not quick,
        detail={"rounds": str(runs), "audit per layer": f"{median(audit) / max(shape[1], 1) * 1e6:.1f} us",
                "export + lowering": f"{build_s:.1f} s"},
        paired=paired_median(audit, partition), rounds=runs, ratios=per_round(audit, partition),
    )
    print(result.line(), flush=True)
    return [result]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--blocks", type=int, default=0)
    parser.add_argument("--runs", type=int, default=0)
    args = parser.parse_args()
    run(args.quick, args.blocks, args.runs)


if __name__ == "__main__":
    main()
