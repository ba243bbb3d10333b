"""Benchmark ``trtcap compare``: time and peak memory against the number of tests.

Generates two records of N tests each (a share of them changed between the two), then measures the steps
(and GC handling) of ``trtcap compare``: loading both, computing the transitions, rendering the JSON and
table reports. Time is measured without tracemalloc (CPU seconds per phase, plus wall time); peak memory in
a second pass under tracemalloc (Python allocations, the part that grows with N).

    python bench/bench_compare.py                 # N = 10000 and 100000
    python bench/bench_compare.py --sizes 200     # a tiny smoke run for CI
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import random
import sys
import tempfile
import time
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pytest_trtcap.runs import compare, load
from pytest_trtcap.runs import record as records
from pytest_trtcap.runs import render as report
from pytest_trtcap.runs.signatures import signature_from_message

SIGNATURES = [
    "AssertionError: assert <N> == <N>",
    "RuntimeError: TensorRT-RTX cannot build FP32 GEMM for SM <N>",
    "ValueError: bad shape <N>x<N>",
    "KeyError: 'weight'",
]


def make_record(n: int, seed: int, change_rate: float, base: dict = None) -> dict:
    rng = random.Random(seed)
    tests = {}
    if base is None:
        for i in range(n):
            r = rng.random()
            if r < 0.85:
                entry = {"outcome": "passed", "signature": None, "reason": None}
            elif r < 0.93:
                reason = f"trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm) #{i % 7}"
                entry = {
                    "outcome": "skipped", "signature": signature_from_message("Skipped: " + reason), "reason": reason
                }
            elif r < 0.97:
                entry = {"outcome": "failed", "signature": SIGNATURES[i % len(SIGNATURES)], "reason": None}
            else:
                entry = {"outcome": "xfailed", "signature": SIGNATURES[2], "reason": "known"}
            entry.update(when="call", duration=0.001, categories=[entry["outcome"]])
            tests[f"tests/test_mod{i // 500:04d}.py::TestCase::test_case[{i}-float16-sm75]"] = entry
    else:
        outcomes = ("passed", "failed", "skipped", "error", "xfailed")
        for nodeid, entry in base["tests"].items():
            if rng.random() < change_rate:
                entry = dict(entry)
                if rng.random() < 0.2:
                    entry["signature"] = SIGNATURES[rng.randrange(len(SIGNATURES))]
                else:
                    entry["outcome"] = outcomes[rng.randrange(len(outcomes))]
                    entry["signature"] = (
                        None if entry["outcome"] == "passed" else SIGNATURES[rng.randrange(len(SIGNATURES))]
                    )
            tests[nodeid] = entry
        for i in range(int(n * change_rate / 10)):  # some tests only in AFTER
            tests[f"tests/test_new.py::test_added[{i}]"] = {"outcome": "passed", "signature": None, "reason": None}
    return {
        "schema": records.SCHEMA, "version": records.VERSION, "arm": "7.5", "label": f"bench seed {seed}",
        "created": records.utc_now(), "tests": tests,
        "reconciliation": {"result": "COMPLETE", "disagreements": [], "sources": {}},
    }


def run_once(before_path: str, after_path: str, max_rows: int) -> dict:
    clock = time.process_time  # CPU seconds: stable on a shared machine; wall time is reported beside it
    w0, t0 = time.perf_counter(), clock()
    before = load.load_record(before_path)
    after = load.load_record(after_path)
    gc.freeze()  # as `trtcap compare` does once the records are loaded
    t1 = clock()
    result = compare.compare_records(before, after)
    t2 = clock()
    report.render(result, "json", io.StringIO())
    t3 = clock()
    report.render(result, "table", io.StringIO(), max_rows=max_rows)
    t4, w4 = clock(), time.perf_counter()
    gc.unfreeze()
    return {"load": t1 - t0, "compare": t2 - t1, "json": t3 - t2, "table": t4 - t3, "total": t4 - t0,
            "wall": w4 - w0, "transitions": len(result["transitions"])}


def measure(n: int, change_rate: float, max_rows: int, workdir: str) -> dict:
    base = make_record(n, 1, change_rate)
    after = make_record(n, 2, change_rate, base)
    before_path = os.path.join(workdir, f"before-{n}.json")
    after_path = os.path.join(workdir, f"after-{n}.json")
    records.dump_record(base, before_path)
    records.dump_record(after, after_path)
    size = os.path.getsize(before_path) + os.path.getsize(after_path)
    del base, after
    gc.collect()
    timing = run_once(before_path, after_path, max_rows)
    gc.collect()
    tracemalloc.start()
    run_once(before_path, after_path, max_rows)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"n": n, "bytes": size, "peak": peak, **timing}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated test counts (default 10000,100000)")
    parser.add_argument("--change-rate", type=float, default=0.05, help="share of tests changed between the records")
    parser.add_argument("--max-rows", type=int, default=100, help="rows per class in the table render")
    ns = parser.parse_args(argv)
    try:
        sizes = [int(s) for s in ns.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes: expected comma-separated integers, got {ns.sizes!r}")
    if not sizes or any(s <= 0 for s in sizes):
        parser.error("--sizes: expected positive integers")
    rows = []
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-") as workdir:
        for n in sizes:
            rows.append(measure(n, ns.change_rate, ns.max_rows, workdir))
    head = (f"{'tests':>8} {'files MiB':>9} {'changed':>8} {'load s':>7} {'compare s':>9} {'json s':>7} "
            f"{'table s':>7} {'cpu s':>7} {'wall s':>7} {'us/test*':>8} {'peak MiB':>8} {'B/test':>7}")
    print(f"trtcap compare benchmark (python {sys.version.split()[0]}, change rate {ns.change_rate})")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['n']:>8} {r['bytes'] / 2**20:>9.1f} {r['transitions']:>8} {r['load']:>7.3f} {r['compare']:>9.3f} "
              f"{r['json']:>7.3f} {r['table']:>7.3f} {r['total']:>7.3f} {r['wall']:>7.3f} "
              f"{(r['load'] + r['compare'] + r['json']) / r['n'] * 1e6:>8.2f} "
              f"{r['peak'] / 2**20:>8.1f} {r['peak'] / r['n']:>7.0f}")
    print("Phases in CPU seconds (time.process_time); wall s is the elapsed time of the whole pass.")
    print("* us/test: CPU of (load + compare + json) / tests. "
          "The table render shows at most --max-rows rows per class,")
    print("  so its cost is flat; peak MiB is tracemalloc's peak over one full load + compare + render.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
