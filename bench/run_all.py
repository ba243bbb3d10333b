"""Run every benchmark; print each figure, its baseline and their ratio; write the results table.

    python bench/run_all.py            # full sizes; checks the targets; writes bench/RESULTS.md
    python bench/run_all.py --quick    # tiny sizes for a CI smoke run; no timing assertions, writes nothing

Exit status: 1 if a benchmark crashed, or (full mode only) missed its target or found a correctness
problem while measuring; else 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _common import REPO, Result, fmt, machine  # noqa: E402

COMPARE = os.path.join(HERE, "bench_compare.py")
QUICK_COMPARE_SIZES = "200"


class _Tee:
    """Copy what the benchmarks print (stdout) into a list, for the results file."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.lines, self._partial = stream, [], ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        parts = (self._partial + text).split("\n")
        self._partial = parts.pop()
        self.lines.extend(parts)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


NOTES = [
    "How each figure is taken:",
    "",
    "- **ratios of interleaved runs** (plugin load, suite, partitioning): each round runs both sides back to "
    "back, the order alternating from round to round; the ratio checked against the target is the ratio of the "
    "two sides' medians, and the median of the per-round ratios is listed beside it. The noise is the half-width "
    "of the 95% interval of the per-round ratios' median (1.58 IQR / sqrt(rounds)): a target met only inside "
    "that interval is reported as not measurable, never as met. The machine's "
    "speed drifts by tens of percent over seconds (other work on the host; CPU time follows wall time), so "
    "two runs close in time compare better than two medians of runs taken at different moments.",
    "- **plugin load**: wall time of a fresh `python -m pytest --collect-only -q test_one.py` process (a one-test "
    "file in a temporary directory with an empty `pytest.ini`), with the plugin against `-p no:trtcap`, alternated "
    "run by run (ABBA...), after warm-up runs. Checked by the ratio of medians (<= 1.02), with Python's default "
    "bytecode caching and with `PYTHONDONTWRITEBYTECODE=1` (set on this machine: every pytest process compiles "
    "the plugin's source, measured from a source-only copy of the packages; pytest's own modules keep the `.pyc` "
    "files pip wrote). A separate fresh process checks that loading the plugin imports neither torch, "
    "torch_tensorrt nor tensorrt. The same with a 2,000-test suite in 20 modules (parametrized, marked with a "
    "marker of the project's own, none of ours), 30 runs each: what a dormant session pays per collector and "
    "per test (for information). And a plain `python -m pytest -p no:cacheprovider test_one.py` (the test runs; "
    "pytest shows its report header, with the plugin's one line), 40 runs each: what a default run pays for the "
    "header (for information).",
    "- **plugin load in CPU instructions** (`bench/bench_load_instructions.py`, where valgrind is installed): the "
    "same two commands, each process run under `valgrind --tool=cachegrind --cache-sim=no` with "
    "`PYTHONHASHSEED=0`, two runs per side; the count of instructions executed does not move with the machine's "
    "load, so the ratio is the plugin's share of the run's CPU work, free of noise (disk and scheduler waits "
    "are outside it). With bytecode caches and from the source-only copy; pytest-xdist's plugin is counted "
    "both ways too, as a yardstick (with it against `-p no:xdist -p no:xdist.looponfail`, ours off on both sides). "
    "For information: the checked figure is the wall-time one.",
    "- **the lightest well-known plugins** (`bench/bench_lightest_plugins.py`, where valgrind is installed and pip "
    "can install from an index): pytest-timeout, pytest-randomly and this project (a wheel built from the "
    "checkout), each installed with `pip install --no-compile` into one throwaway virtual environment beside this "
    "environment's pytest version; each counted alone against pytest alone (every other plugin off on both sides), "
    "as above, with bytecode caches and with `PYTHONDONTWRITEBYTECODE=1` and no `.pyc` of the plugin under test. "
    "For information: what 2% means for plugins users already accept, installed the way users install them (pytest "
    "then rewrites every module of the distribution, not only the entry point's package).",
    "- **import cost**: `python -X importtime -c \"import pytest, importlib.metadata; import MODULE\"` in fresh "
    "processes, `pytest_trtcap.plugin` and `_hypothesis_pytestplugin` alternated round by round; the module's "
    "cumulative column (pytest's own import is outside it). Target <= 8 ms with bytecode caches; without them "
    "(source-only copy) for information.",
    "- **isolation per test**: in process, with torch_tensorrt imported (`guards.import_torch_tensorrt()`): the "
    "two comparisons of the held objects a clean test costs (`Ledger.boundary` at its start and at its end, then "
    "`Ledger.end`, over `builtin_specs()`), against the naive reset fixture (`{k: list(v)}` of "
    "`DYNAMO_ATEN_CONVERTERS`, `list(ATOMIC_SUBGRAPHS)`, the lowering pass lists and tables, restored with "
    "`clear()`/`update()` and slice assignment); per-iteration `perf_counter_ns`, the two alternating in blocks of "
    "50; medians.",
    "- **suites**: one generated file whose conftest calls `guards.import_torch_tensorrt()`: 2,000 `def test_i()`; "
    "one test parametrized 2,000 times with two arguments; one test parametrized 500 times that takes ten function "
    "fixtures. Every test body appends `time.perf_counter()` to a list (the same statement on both sides) and the "
    "conftest writes the last minus the first: the span of the tests themselves, first body to last, in process, "
    "the figure checked. `python -m pytest -q -p no:cacheprovider` with the plugin against `-p no:trtcap`, "
    "alternated, 15 runs a side after a warm-up, bytecode caches on; the whole process's wall time beside it, for "
    "information. Each suite is also run once a side under valgrind (cachegrind, no cache simulation, "
    "`PYTHONHASHSEED=0`): the instructions of the whole run. The conftest records, per run, whether the plugin's "
    "isolation held the registry and how many bodies ran.",
    "- **partitioning**: `fast_partition(gm, min_block_size=1)` of a deep copy of the lowered graph of 300 FP16 "
    "blocks (four `nn.Linear`, fused attention, ReLU, residual), after "
    "`DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(min_block_size=1))`, targets declared with "
    "`guards.declare_targets`; guards installed against not, two deep copies made before each round so its two "
    "runs are adjacent; the process's CPU time (single-threaded Python, so this is the time the guards add; "
    "it leaves out time spent waiting for a core, though not the host's speed drift; wall medians are listed "
    "too). The guard consultations are counted in an untimed run. The "
    "\"computed\" rows add what the guarded validators cost over every node of the graph (guarded minus stock, "
    "swept directly) to the partition time without guards: the same overhead without run-to-run noise.",
    "- **layer audit**: `pytest_trtcap.unservable_layers(partitioned)` (each TensorRT block's network built by "
    "Torch-TensorRT's interpreter and read) against the `fast_partition(gm, min_block_size=1)` that made the "
    "partition, of the lowered graph of 30 of the FP16 blocks above, targets declared 7.5; both back to back in "
    "each round on a fresh deep copy, 11 rounds after a warm-up; the process's CPU time "
    "(`bench/bench_layer_audit.py`). For information: what `--trtcap-audit-layers` adds per partition.",
    "- **assert_trt_close**: `pytest_trtcap.assert_trt_close(a, b)` against `torch.testing.assert_close(a, b)` on "
    "the same passing CPU tensors (`bench/bench_trt_close.py`), one torch thread; per-call `perf_counter_ns`, the "
    "two alternating in blocks of 25; medians.",
    "- **needs a GPU**: 2,000 `def test_i(): pass` in one generated file; `python -m pytest -q -p no:cacheprovider` "
    "with `--trtcap-needs-gpu skip` against `--trtcap-needs-gpu fail` and a second `fail` side as an A/A control, "
    "rotated within each round; wall times (CPU times listed too). The checked figure is the ratio of medians; "
    "where its distance from 1 is within the A/A ratio's, it is not measurable. A conftest records each run's "
    "setting.",
]


def _benchmarks() -> list[tuple[str, Callable[[bool], list[Result]]]]:
    import bench_isolation
    import bench_layer_audit
    import bench_lightest_plugins
    import bench_load_instructions
    import bench_needs_gpu
    import bench_partition
    import bench_plugin_load
    import bench_trt_close

    return [
        ("plugin load", lambda quick: bench_plugin_load.run(quick)),
        ("plugin load in instructions", lambda quick: bench_load_instructions.run(quick)),
        ("the lightest well-known plugins", lambda quick: bench_lightest_plugins.run(quick)),
        ("isolation", lambda quick: bench_isolation.run(quick)),
        ("partitioning", lambda quick: bench_partition.run(quick)),
        ("layer audit", lambda quick: bench_layer_audit.run(quick)),
        ("assert_trt_close", lambda quick: bench_trt_close.run(quick)),
        ("needs a GPU", lambda quick: bench_needs_gpu.run(quick)),
    ]


def run_compare(quick: bool) -> tuple[int | None, str, list[str]]:
    """bench/bench_compare.py (written separately), if it exists: (exit status, output, command)."""
    if not os.path.exists(COMPARE):
        return None, "", []
    cmd = [sys.executable, COMPARE] + (["--sizes", QUICK_COMPARE_SIZES] if quick else [])
    print(f"\n== compare at scale: {' '.join(['python', os.path.relpath(COMPARE, REPO)] + cmd[2:])} ==", flush=True)
    proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(proc.stdout, end="" if proc.stdout.endswith("\n") else "\n")
    print(f"bench_compare: exit {proc.returncode}", flush=True)
    return proc.returncode, proc.stdout, cmd


#: Wall-time figure -> the instruction count of the same configuration (``bench_load_instructions``).
COUNTED = {"plugin_load": "plugin_load_instructions", "plugin_load_no_pyc": "plugin_load_instructions_no_pyc"}


def link_counts(results: list[Result]) -> None:
    """Give each wall-time plugin-load figure its instruction count, which its verdict then heeds."""
    by_name = {r.name: r for r in results}
    for wall, counted in COUNTED.items():
        if wall in by_name and counted in by_name and by_name[counted].unit == "M instructions":
            by_name[wall].counted = by_name[counted].ratio


def table(results: list[Result]) -> list[str]:
    lines = ["| benchmark | measured (median) | baseline (median) | ratio | target | verdict |",
             "|---|---|---|---|---|---|"]
    for r in results:
        target = f"<= {r.target:.3g}" if r.target is not None else "-"
        verdict = r.outcome
        if r.problems:
            verdict += "; " + "; ".join(r.problems)
        ratio = f"{r.ratio:.3f}"
        if r.paired is not None:
            ratio += f" (ratio of medians; per-round median {r.paired:.3f}"
            ratio += f"; {r.noise_note})" if r.noise_note else ")"
        value, baseline = fmt(r.value, r.unit), fmt(r.baseline, r.unit)
        lines.append(f"| {r.what} | {value} | {baseline} | {ratio} | {target} | {verdict} |")
    return lines


BENCHMARKS_DOC = os.path.join(REPO, "docs", "benchmarks.md")
HEADLINE_START, HEADLINE_END = "<!-- bench-headline:start -->", "<!-- bench-headline:end -->"


def headline_block(results_text: str) -> str:
    """The headline of the results for ``docs/benchmarks.md``: the measurement lines and the table's rows that have
    a target, verbatim from RESULTS.md.

    One source for every figure the docs quote; ``tests/test_readme.py`` checks the copy.
    """
    lines = results_text.splitlines()
    measured = next(line for line in lines if line.startswith("Measured "))
    machine_line = next(line for line in lines if line.startswith("Machine: "))
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    header, rule, rows = lines[first], lines[first + 1], []
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        if line.split(" | ")[-2].strip() != "-":  # the target column
            rows.append(line)
    return "\n".join([measured, "", machine_line, "", header, rule, *rows])


def sync_docs(results_path: str, doc_path: str = BENCHMARKS_DOC) -> None:
    """Rewrite the headline block of ``docs/benchmarks.md`` from the results file just written."""
    with open(results_path, encoding="utf-8") as f:
        block = headline_block(f.read())
    with open(doc_path, encoding="utf-8") as f:
        text = f.read()
    start = text.index(HEADLINE_START) + len(HEADLINE_START)
    end = text.index(HEADLINE_END)
    with open(doc_path, "w", encoding="utf-8") as f:
        f.write(text[:start] + "\n" + block + "\n" + text[end:])


def write_results(path: str, info: dict[str, str], command: str, results: list[Result], elapsed: float,
                  log: list[str], compare: tuple[int | None, str, list[str]]) -> None:
    out = [
        "# Benchmark results",
        "",
        f"Measured {info['date']} with `{command}` ({elapsed:.0f} s in all).",
        "",
        f"Machine: {info['nproc']} CPU cores available (`nproc`), {info['cpu']} (`/proc/cpuinfo`), no GPU; "
        f"load average at start {info['load average at start']} (a shared virtual machine: its speed drifts, so "
        "every ratio compares figures taken in the same run, from interleaved runs). "
        f"Python {info['python']}, pytest {info['pytest']}, torch {info['torch']}, "
        f"torch-tensorrt-rtx {info['torch-tensorrt-rtx']}.",
        "",
        *table(results),
        "",
        "Details:",
        "",
    ]
    for r in results:
        if r.detail:
            out.append(f"- {r.what}: " + "; ".join(f"{k}: {v}" for k, v in r.detail.items()))
    out += ["", *NOTES]
    code, text, cmd = compare
    if code is not None:
        out += ["", f"## Compare at scale (`{' '.join(['python', 'bench/bench_compare.py'] + cmd[2:])}`, exit {code})",
                "", "```", *text.rstrip("\n").splitlines(), "```"]
    out += ["", "## Output of the run", "", "```", *log, "```"]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes for a CI smoke run; no timing assertions")
    parser.add_argument("--results", default=None,
                        help="where to write the results table (default bench/RESULTS.md; none with --quick)")
    args = parser.parse_args(argv)
    results_path = args.results or (None if args.quick else os.path.join(HERE, "RESULTS.md"))
    command = "python bench/run_all.py" + (" --quick" if args.quick else "")

    info = machine()
    print(f"trtcap benchmarks ({'quick: tiny sizes, no timing assertions' if args.quick else 'full'})")
    print(f"command: {command}")
    for key, value in info.items():
        print(f"{key}: {value}")
    sys.stdout.flush()

    start = time.perf_counter()
    results: list[Result] = []
    crashed: list[str] = []
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        for name, bench in _benchmarks():
            try:
                results.extend(bench(args.quick))
            except Exception:
                traceback.print_exc()
                print(f"benchmark {name}: CRASHED", flush=True)
                crashed.append(name)
    finally:
        sys.stdout = tee.stream
    link_counts(results)
    compare = run_compare(args.quick)
    if compare[0] not in (None, 0):
        crashed.append("compare")
    elapsed = time.perf_counter() - start

    print("\n== summary ==")
    printed = [r.line() for r in results]
    for line in printed:
        print(line)
    if compare[0] is None:
        print("bench_compare.py: not present, skipped")
    missed = [r.name for r in results if r.missed]
    print(f"total {elapsed:.0f} s; crashed: {', '.join(crashed) or 'none'}; "
          f"missed: {', '.join(missed) or 'none'}{' (not checked with --quick)' if args.quick else ''}")
    if results_path:
        write_results(results_path, info, command, results, elapsed, tee.lines, compare)
        print(f"results written to {os.path.relpath(results_path, REPO)}")
        if args.results is None:
            sync_docs(results_path)
            print("docs/benchmarks.md's headline block rewritten from it")
    return 1 if crashed or missed else 0


if __name__ == "__main__":
    sys.exit(main())
