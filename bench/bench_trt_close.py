"""Benchmark: what ``pytest_trtcap.assert_trt_close`` adds to ``torch.testing.assert_close`` on a passing comparison.

The same tensors go to both; per-call ``perf_counter_ns``, the two alternating in blocks (ABBA...), medians of
each side, ratio of medians; the spread of the per-block ratios (each block times both sides back to back) gives
the noise, so a figure the machine's drift can move is reported as not measurable rather than met or missed.
Cases: a tiny tensor, a 64x64 tensor, a nested structure of three, a 1000x1000
tensor (targets <= 1.05), and for information the case that costs a full scan: an output whose first element
is zero (a ReLU output), small and large. One torch thread, so the machine's second core does not add noise.

    python bench/bench_trt_close.py [--quick] [--iterations N]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, median, spread

TARGET = 1.05
BLOCK = 25


def _cases(torch: Any) -> list[tuple[str, str, Any, Any, bool]]:
    """(name, description, actual, expected, checked against the target)."""
    gen = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> Any:
        return torch.randn(*shape, generator=gen)

    tiny, small, large = rand(4), rand(64, 64), rand(1000, 1000)
    nested = {"logits": rand(8, 10), "aux": (rand(8, 4), rand(8))}
    relu_small, relu_large = torch.relu(rand(64, 64)), torch.relu(rand(1000, 1000))
    relu_small.view(-1)[0], relu_large.view(-1)[0] = 0.0, 0.0
    clone = lambda v: {k: clone(x) for k, x in v.items()} if isinstance(v, dict) else (  # noqa: E731
        tuple(clone(x) for x in v) if isinstance(v, tuple) else v.clone())
    return [
        ("trt_close_tiny", "tensor of 4 FP32", tiny.clone(), tiny, True),
        ("trt_close_small", "64x64 FP32", small.clone(), small, True),
        ("trt_close_nested", "dict of 3 small FP32 tensors (nested)", clone(nested), nested, True),
        ("trt_close_large", "1000x1000 FP32", large.clone(), large, True),
        ("trt_close_leading_zero_small", "64x64 FP32 ReLU output, first element 0 (full scan)",
         relu_small.clone(), relu_small, False),
        ("trt_close_leading_zero_large", "1000x1000 FP32 ReLU output, first element 0 (full scan)",
         relu_large.clone(), relu_large, False),
    ]


def _time(fn: Callable[..., None], actual: Any, expected: Any) -> int:
    start = time.perf_counter_ns()
    fn(actual, expected)
    return time.perf_counter_ns() - start


class Timings(NamedTuple):
    ours: list[int]  # per-call nanoseconds
    theirs: list[int]
    ratios: list[float]  # per block: the median of ours over the median of theirs, timed back to back


def measure(ours: Callable[..., None], theirs: Callable[..., None], actual: Any, expected: Any,
            iterations: int, block: int = BLOCK) -> Timings:
    """Per-call times of both, alternating in blocks of ``block`` calls (ABBA...), after a warm-up."""
    for _ in range(5):
        ours(actual, expected)
        theirs(actual, expected)
    times: dict[str, list[int]] = {"ours": [], "theirs": []}
    ratios = []
    gc.disable()
    try:
        for b in range(max(2, iterations // block)):
            order = (("ours", ours), ("theirs", theirs)) if b % 2 == 0 else (("theirs", theirs), ("ours", ours))
            this = {name: [_time(fn, actual, expected) for _ in range(block)] for name, fn in order}
            for name, calls in this.items():
                times[name].extend(calls)
            ratios.append(median(this["ours"]) / median(this["theirs"]))
    finally:
        gc.enable()
    return Timings(times["ours"], times["theirs"], ratios)


def run(quick: bool = False, iterations: int = 0) -> list[Result]:
    import torch

    from pytest_trtcap import assert_trt_close

    torch.set_num_threads(1)
    banner("assert_trt_close against torch.testing.assert_close, passing comparisons")
    results = []
    for name, what, actual, expected, checked in _cases(torch):
        n, block = iterations or (50 if quick else 4000), BLOCK
        if name.endswith("_large"):  # ~10 ms a call: fewer calls, in short blocks so the machine drifts less
            n, block = max(50, n // 20), 5
        timed = measure(assert_trt_close, torch.testing.assert_close, actual, expected, n, block)
        ours, theirs = timed.ours, timed.theirs
        result = Result(
            name=name, what=f"assert_trt_close, passing, {what}: per call",
            value=median(ours) / 1000, baseline=median(theirs) / 1000, unit="us",
            target=TARGET if checked else None, checked=not quick,
            paired=median(timed.ratios), rounds=len(timed.ratios), ratios=timed.ratios,
            detail={"calls": f"{len(ours)} each, alternating blocks of {block}",
                    "spread (us)": f"{spread([t / 1000 for t in ours])} vs {spread([t / 1000 for t in theirs])}"},
        )
        print(result.line(), flush=True)
        results.append(result)
    return results


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few calls, no timing assertions")
    parser.add_argument("--iterations", type=int, default=0, help="calls per side (default 4000; 200 for 1000x1000)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.iterations)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
