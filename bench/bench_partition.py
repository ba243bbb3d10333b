"""Benchmark 3: what the guards cost Torch-TensorRT's partitioner, and the predicate per call.

A stack of FP16 linear/attention/ReLU blocks is exported with ``torch.export``, lowered like
``torch_tensorrt.dynamo.compile`` does (``get_decompositions(False)`` + ``post_lowering``), and partitioned
with ``partitioning.fast_partition(gm, min_block_size=1)`` after
``DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(min_block_size=1))``. Guards installed
against not installed, both back to back in each round (order alternated), each on a fresh deep copy; the
ratio checked is the median of the per-round ratios, with the medians of each side beside it. Times are
the process's CPU time: the partitioner is single-threaded Python, so CPU time is what the guards add, and
it leaves out time spent waiting for a core on a shared machine (wall medians are printed too).
Targets declared 8.9 (the guards answer from the cached predicate) and 7.5 (FP16, so the guards are
consulted on every node and fire on none). Then the guarded validators swept over the whole graph against
the stock ones, and the predicate and a guarded validator per call, in nanoseconds.

    python bench/bench_partition.py [--quick] [--blocks N] [--runs N]
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, median, paired_median, per_round, spread

TARGET = 1.05
DIM = 16


def build_graph(blocks: int) -> tuple[Any, Any, float]:
    """The lowered graph module the partitioner receives, its settings, and the seconds export + lowering took."""
    import trtcap_guards as guards

    guards.import_torch_tensorrt()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch_tensorrt.dynamo._settings import CompilationSettings
    from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

    class Block(nn.Module):
        """q/k/v projections, fused attention, output projection, ReLU, residual."""

        def __init__(self) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(DIM, DIM) for _ in range(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = F.scaled_dot_product_attention(self.q(x), self.k(x), self.v(x))
            return torch.relu(self.o(a)) + x

    model = nn.Sequential(*[Block() for _ in range(blocks)]).half().eval()
    x = torch.randn(2, 4, 8, DIM, dtype=torch.float16)
    settings = CompilationSettings(min_block_size=1)
    start = time.perf_counter()
    ep = torch.export.export(model, (x,)).run_decompositions(get_decompositions(False))
    gm = post_lowering(ep.module(), settings)
    return gm, settings, time.perf_counter() - start


def layout(gm: Any) -> tuple[str, ...]:
    """The partitioned module's children in order (``_run_on_acc_0``...)."""
    return tuple(n.target for n in gm.graph.nodes if n.op == "call_module")


@contextmanager
def counting_guard_consultations() -> Iterator[Counter]:
    """Count the guards' rule look-ups (untimed verification runs only)."""
    from trtcap_guards import registry

    calls: Counter = Counter()
    inner = getattr(registry, "rejecting_rule", None)
    if inner is None:  # the guard's internals changed: report "not counted" rather than fail
        calls["unknown"] = -1
        yield calls
        return

    def counted(node: Any, *args: Any, **kwargs: Any) -> Any:
        calls[str(getattr(node, "target", "?"))] += 1
        return inner(node, *args, **kwargs)

    registry.rejecting_rule = counted
    try:
        yield calls
    finally:
        registry.rejecting_rule = inner


def partition_once(gm: Any, installed: bool) -> tuple[float, float, tuple[str, ...]]:
    """(CPU seconds, wall seconds, layout) of one ``fast_partition`` on a fresh deep copy."""
    from torch_tensorrt.dynamo import partitioning

    import trtcap_guards as guards

    if installed:
        guards.install()
    else:
        guards.uninstall()
    work = copy.deepcopy(gm)
    gc.collect()
    cpu, wall = time.process_time(), time.perf_counter()
    partitioned, _ = partitioning.fast_partition(work, min_block_size=1)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return cpu, wall, layout(partitioned)


def partition_round(gm: Any, order: tuple[bool, bool]) -> dict[bool, tuple[float, float, tuple[str, ...]]]:
    """One round: both sides back to back (copies made first, so the two timed runs are adjacent in time)."""
    from torch_tensorrt.dynamo import partitioning

    import trtcap_guards as guards

    works = [copy.deepcopy(gm) for _ in order]
    out = {}
    for installed, work in zip(order, works):
        if installed:
            guards.install()
        else:
            guards.uninstall()
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        partitioned, _ = partitioning.fast_partition(work, min_block_size=1)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        out[installed] = (cpu, wall, layout(partitioned))
        del partitioned
    return out


def per_call_ns(fn: Callable[[], Any], calls: int, repeats: int = 7) -> float:
    """Median over ``repeats`` of the mean time of ``calls`` calls, in ns (loop overhead included)."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter_ns() - start) / calls)
    return median(samples)


def validator_pass_ms(gm: Any, settings: Any, repeats: int) -> tuple[float, float, int]:
    """Every call_function node through its first converter's validator, as ``fast_partition`` consults them.

    Returns (guarded ms, stock ms, nodes): medians over ``repeats`` sweeps of the whole graph, alternated.
    """
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS

    calls = []
    for node in gm.graph.nodes:
        entries = DYNAMO_ATEN_CONVERTERS.get(node.target) if node.op == "call_function" else None
        if entries:
            guarded = entries[0].capability_validator
            calls.append((guarded, getattr(guarded, "__wrapped__", guarded), node))

    def sweep(index: int) -> float:
        start = time.perf_counter()
        for entry in calls:
            entry[index](entry[2], settings)
        return (time.perf_counter() - start) * 1e3

    samples: dict[int, list[float]] = {0: [], 1: []}
    for i in range(repeats):
        for index in ((0, 1) if i % 2 == 0 else (1, 0)):
            samples[index].append(sweep(index))
    return median(samples[0]), median(samples[1]), len(calls)


def run(quick: bool = False, blocks: int = 0, runs: int = 0) -> list[Result]:
    import trtcap_guards as guards

    blocks = blocks or (5 if quick else 300)
    runs = runs or (2 if quick else 21)
    gm, settings, build_s = build_graph(blocks)
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    ops = Counter(n.op for n in gm.graph.nodes)
    targets = Counter(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
    banner(f"guards in partitioning: fast_partition of {len(gm.graph.nodes)} nodes "
           f"({ops['call_function']} call_function), {runs} rounds of both sides back to back")
    print(f"graph: {blocks} FP16 blocks; export + lowering {build_s:.1f} s; ops: "
          + ", ".join(f"{t} x{n}" for t, n in targets.most_common()))

    was_installed = guards.is_installed()
    previous = (DYNAMO_CONVERTERS.compilation_settings, DYNAMO_CONVERTERS.disallowed_targets)
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    results: list[Result] = []
    # Everything alive now (torch, the graph) is moved out of the collector's generations, so the collection
    # before each timed run is quick and the two runs of a round follow each other closely. Both sides
    # allocate the same way; collections during a run still happen as usual.
    gc.collect()
    gc.freeze()
    try:
        for target in ("8.9", "7.5"):
            with guards.declare_targets(target, origin="bench"):
                results.extend(partition_at(gm, settings, target, runs, quick, ops))
    finally:
        gc.unfreeze()
        if was_installed:
            guards.install()
        else:
            guards.uninstall()
        DYNAMO_CONVERTERS.compilation_settings, DYNAMO_CONVERTERS.disallowed_targets = previous
    return results


def partition_at(gm: Any, settings: Any, target: str, runs: int, quick: bool, ops: Counter) -> list[Result]:
    """Partition timings, the whole-graph validator pass and the per-call figures at one declared target."""
    import trtcap_guards as guards

    tag = target.replace(".", "")
    decision = guards.capability_decision(settings)
    fired_before = guards.fired()
    # Untimed: count how often the installed guards are consulted in one partition.
    guards.install()
    with counting_guard_consultations() as consulted:
        _, _, guarded_layout = partition_once(gm, True)
    cpu: dict[bool, list[float]] = {True: [], False: []}
    wall: dict[bool, list[float]] = {True: [], False: []}
    layouts = {guarded_layout}
    for i in range(runs):
        order = (True, False) if i % 2 == 0 else (False, True)
        for installed, (cpu_s, wall_s, parts) in partition_round(gm, order).items():
            cpu[installed].append(cpu_s)
            wall[installed].append(wall_s)
            layouts.add(parts)
    guards.install()
    guarded_ms, stock_ms, swept = validator_pass_ms(gm, settings, 5 if quick else 15)
    fired = {k: v - fired_before.get(k, 0) for k, v in guards.fired().items() if v != fired_before.get(k, 0)}

    on, off = median(cpu[True]), median(cpu[False])
    wall_on, wall_off = median(wall[True]), median(wall[False])
    paired = paired_median(cpu[True], cpu[False])
    added_s = (guarded_ms - stock_ms) / 1e3
    n_consulted = sum(consulted.values())
    print(f"targets {target} (targets Turing: {'yes' if decision.targets_turing else 'no'}): "
          f"guard consultations per partition: {n_consulted if n_consulted >= 0 else 'not counted'}; "
          f"fired: {sum(fired.values())}; partition: {' | '.join('+'.join(parts) for parts in sorted(layouts))}")
    print(f"  CPU time: guards installed median {on:.3f} s (min {min(cpu[True]):.3f}, range {spread(cpu[True])}), "
          f"not installed median {off:.3f} s (min {min(cpu[False]):.3f}, range {spread(cpu[False])}); "
          f"median of per-round ratios {paired:.3f}; ratio of medians {on / off:.3f}; "
          f"ratio of minimums {min(cpu[True]) / min(cpu[False]):.3f}")
    print(f"  wall time: installed median {wall_on:.3f} s, not installed {wall_off:.3f} s "
          f"(ratio {wall_on / wall_off:.3f})")
    print(f"  validators over the graph ({swept} nodes, one consultation each): guarded {guarded_ms:.2f} ms, "
          f"stock {stock_ms:.2f} ms; the guards add {added_s * 1e3:.2f} ms per partition, "
          f"{added_s / off * 100:.2f}% of its CPU time without guards")
    name = "partition_sm89" if target == "8.9" else "partition_sm75_fp16"
    fp16 = " (FP16: guards consulted, none fires)" if target == "7.5" else ""
    partition = Result(
        name, f"fast_partition of {ops['call_function']} call_function nodes, targets {target}{fp16}, CPU time",
        on, off, "s", TARGET, checked=not quick, paired=paired, rounds=runs, ratios=per_round(cpu[True], cpu[False]),
        detail={"nodes": f"{sum(ops.values())} ({ops['call_function']} call_function)",
                "runs": f"{runs} rounds, both sides back to back in each, order alternated",
                "ratio of minimums": f"{min(cpu[True]) / min(cpu[False]):.3f}",
                "wall time (medians)": f"{wall_on:.3f} s vs {wall_off:.3f} s, ratio {wall_on / wall_off:.3f}",
                "guard consultations per partition": str(n_consulted)})
    if fired:
        partition.problems.append(f"guards fired: {fired}")
    if len(layouts) != 1:
        partition.problems.append(f"partitions differ between runs: {sorted(layouts)}")
    if n_consulted == 0:
        partition.problems.append("the installed guards were never consulted")
    estimate = Result(
        f"partition_sm{tag}_from_calls",
        f"the same, computed: fast_partition CPU time without guards + what the guarded validators add over the "
        f"graph's {swept} nodes, targets {target}",
        off + added_s, off, "s", None, checked=not quick,
        detail={"validators over the graph": f"guarded {guarded_ms:.2f} ms, stock {stock_ms:.2f} ms"})
    results = [partition, estimate] + per_call(gm, settings, target, quick, off / max(ops["call_function"], 1) * 1e9)
    for r in results:
        print(r.line(), flush=True)
    return results


def per_call(gm: Any, settings: Any, target: str, quick: bool, per_node_ns: float) -> list[Result]:
    """The predicate and the guarded ``aten.linear`` validator per call, at the declared target."""
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS

    import trtcap_guards as guards

    calls = 2000 if quick else 50000
    node = next(n for n in gm.graph.nodes if n.op == "call_function" and str(n.target) == "aten.linear.default")
    guards.install()
    guarded = DYNAMO_ATEN_CONVERTERS[node.target][0].capability_validator
    stock = getattr(guarded, "__wrapped__", None)
    if stock is None:
        raise RuntimeError("the installed guard does not expose the stock validator as __wrapped__")
    if guarded(node, settings) is not True:
        raise AssertionError(f"the guard rejected an FP16 linear at targets {target}")
    predicate = per_call_ns(lambda: guards.trt_rtx_targets_turing(settings), calls)
    with_guard = per_call_ns(lambda: guarded(node, settings), calls)
    without = per_call_ns(lambda: stock(node, settings), calls)
    print(f"  per call ({calls} calls x 7, median): guards.trt_rtx_targets_turing(settings) {predicate:.0f} ns; "
          f"guarded aten.linear validator {with_guard:.0f} ns, stock {without:.0f} ns; "
          f"fast_partition per call_function node without guards {per_node_ns:.0f} ns")
    tag = target.replace(".", "")
    return [
        Result(f"predicate_sm{tag}", f"`guards.trt_rtx_targets_turing(settings)` per call, targets {target}, "
               "against fast_partition's CPU time per node", predicate, per_node_ns, "ns", None, checked=not quick),
        Result(f"validator_sm{tag}", f"guarded `aten.linear` validator per call (FP16 node), targets {target}, "
               "against the stock validator", with_guard, without, "ns", None, checked=not quick),
    ]


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny graph, no timing assertions")
    parser.add_argument("--blocks", type=int, default=0,
                        help="blocks in the model (default 300: 2100 call_function nodes)")
    parser.add_argument("--runs", type=int, default=0, help="partition runs per side and target (default 21)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.blocks, args.runs)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
