"""Benchmark 2: what the per-test isolation costs, with torch_tensorrt imported.

* Per test, in process: the two comparisons of the held objects a clean test costs (``Ledger.boundary`` at its
  start and at its end, then ``Ledger.end``, over ``builtin_specs()``), against the naive reset fixture for the
  same state: snapshot ``{k: list(v)}`` of ``DYNAMO_ATEN_CONVERTERS``, ``list(ATOMIC_SUBGRAPHS)``, the two lowering
  pass lists and the three tables (decompositions, constant-fold exclusions), then restore with
  ``clear()``/``update()`` and slice assignment. Medians of per-iteration times, the two measured in alternating
  blocks. Also the cost when a test did leak (one converter added), for information.
* Suites whose conftest imports torch_tensorrt (so isolation is active), each run in a fresh process with the
  plugin and with ``-p no:trtcap`` (same conftest, same test file), alternated, bytecode caches on (Python's
  default; the warm-up run writes them): 2,000 trivial tests, 2,000 parametrized tests (two arguments: pytest gives
  each a fixture of its own), and 500 tests with ten function fixtures each (``--quick``: the trivial suite only).
  The checked figure is the span of the tests themselves: every test body appends ``time.perf_counter()`` to a
  list (the same statement on both sides), and the conftest writes the last minus the first at the session's end,
  so the torch_tensorrt import, collection and the session's start and end are outside it. The whole process's
  wall time is reported beside it, for information.

  Each suite is also run once a side under callgrind (where valgrind and a C compiler are installed; not with
  ``--quick`` or ``--no-count``): the CPU instructions of the span, counted from the first test body to the last,
  a figure the machine's speed drift cannot move.

    python bench/bench_isolation.py [--quick] [--iterations N] [--tests N] [--runs N] [--shape NAME] [--no-count]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, clean_env, interleaved, median, paired_median, per_round, spread

PER_TEST_TARGET = 1 / 3
SUITE_TARGET = 1.05
TEN_FIXTURES_TARGET = 1.10  # issue 33: ten function fixtures a test, in the span of the tests
BLOCK = 50  # iterations per block; the contenders alternate block by block
#: Suite runs per side: the per-round ratios of 2,000-test suites spread by several percent on a shared machine,
#: and the noise of their median shrinks with the square root of the rounds.
RUNS = 15


def _state() -> tuple[dict, object, object]:
    import trtcap_guards as guards

    guards.import_torch_tensorrt()
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS
    from torch_tensorrt.dynamo.partitioning import _atomic_subgraphs

    return DYNAMO_ATEN_CONVERTERS, _atomic_subgraphs, guards


def _extra_state() -> tuple[list, list]:
    """The rest of what isolation holds: (pass lists, tables), for the naive fixture to copy and put back."""
    from torch_tensorrt.dynamo.lowering import _decomposition_groups as groups
    from torch_tensorrt.dynamo.lowering.constant_fold_exclusions import _core as fold
    from torch_tensorrt.dynamo.lowering.passes import _aten_lowering_pass as passes

    lists = [passes.ATEN_PRE_LOWERING_PASSES.passes, passes.ATEN_POST_LOWERING_PASSES.passes]
    tables = [groups.TORCH_TRT_DECOMPOSITIONS, groups.ENABLED_TORCH_DECOMPOSITIONS,
              fold._CONSTANT_FOLD_EXCLUSION_RULES]
    return lists, tables


def _alternate(contenders: dict[str, Callable[[], int]], iterations: int) -> dict[str, list[float]]:
    """Per-iteration times in microseconds; contenders alternate in blocks of ``BLOCK`` iterations."""
    times: dict[str, list[float]] = {name: [] for name in contenders}
    for fn in contenders.values():  # warm-up
        for _ in range(BLOCK):
            fn()
    done = 0
    while done < iterations:
        n = min(BLOCK, iterations - done)
        for name, fn in contenders.items():
            out = times[name]
            for _ in range(n):
                out.append(fn() / 1000.0)
        done += n
        contenders = dict(reversed(list(contenders.items())))
    return times


def per_test(iterations: int, quick: bool) -> list[Result]:
    table, atomic_module, guards = _state()
    lists, tables = _extra_state()
    from pytest_trtcap.isolation.held_state import builtin_specs
    from pytest_trtcap.isolation.ledger import Ledger, Unit

    ledger = Ledger(builtin_specs())
    ledger.see_new()
    clock = time.perf_counter_ns

    def plugin_clean() -> int:
        test = Unit("test", "test")
        t0 = clock()
        ledger.boundary(test)  # its start: the first comparison of the held objects
        ledger.boundary(test)  # its end: the second
        changes = ledger.end(test)  # judged: nothing is left to judge
        t1 = clock()
        if changes:
            raise AssertionError(f"a clean iteration reported changes: {changes}")
        return t1 - t0

    def naive() -> int:
        t0 = clock()
        snapshot = {k: list(v) for k, v in table.items()}
        atomic = list(atomic_module.ATOMIC_SUBGRAPHS)
        held_lists = [list(lst) for lst in lists]
        held_tables = [dict(d) for d in tables]
        # ... the test runs here ...
        table.clear()
        table.update(snapshot)
        atomic_module.ATOMIC_SUBGRAPHS[:] = atomic
        for lst, held in zip(lists, held_lists):
            lst[:] = held
        for d, held in zip(tables, held_tables):
            d.clear()
            d.update(held)
        t1 = clock()
        return t1 - t0

    linear = next(k for k in table if str(k) == "aten.linear.default")
    extra = dataclasses.replace(table[linear][0])

    def plugin_leak() -> int:
        test = Unit("test", "test")
        t0 = clock()
        ledger.boundary(test)
        t1 = clock()
        table[linear].append(extra)  # the test leaks one converter (not timed)
        t2 = clock()
        ledger.boundary(test)
        changes = ledger.end(test)
        t3 = clock()
        if not changes or any(c is extra for c in table[linear]):
            raise AssertionError(f"the leak was not reported and undone: {changes}")
        return (t1 - t0) + (t3 - t2)

    entries = sum(len(v) for v in table.values())
    banner(f"isolation per test: {iterations} iterations each, alternating blocks of {BLOCK} "
           f"(registry: {len(table)} targets, {entries} converters; "
           f"ATOMIC_SUBGRAPHS: {len(atomic_module.ATOMIC_SUBGRAPHS)} entries)")
    gc.collect()
    times = _alternate({"plugin": plugin_clean, "naive": naive}, iterations)
    leak_times = _alternate({"leak": plugin_leak, "naive": naive}, max(iterations // 5, BLOCK))
    ours, base = median(times["plugin"]), median(times["naive"])
    leak, leak_base = median(leak_times["leak"]), median(leak_times["naive"])
    print(f"pytest_trtcap.isolation, a clean test (two comparisons of the held objects, then its end): "
          f"median {ours:.2f} us (range {spread(times['plugin'])} us)")
    print(f"naive reset fixture (copy every list, clear/update + slice restore): median {base:.2f} us "
          f"(range {spread(times['naive'])} us)")
    print(f"pytest_trtcap.isolation when the test leaked one converter (describe + restore): median {leak:.2f} us")
    clean = Result("isolation_per_test",
                   "isolation per test, clean test (two comparisons of the held objects, then its end)", ours,
                   base, "us", PER_TEST_TARGET, checked=not quick,
                   detail={"iterations": f"{iterations} each, alternating blocks of {BLOCK}",
                           "registry": f"{len(table)} targets, {entries} converters"})
    leaked = Result("isolation_leak", "isolation per test, test leaked one converter (report + restore)",
                    leak, leak_base, "us", None, checked=not quick,
                    detail={"iterations": f"{len(leak_times['leak'])} each"})
    for r in (clean, leaked):
        print(r.line(), flush=True)
    return [clean, leaked]


_CONFTEST = '''\
import os

import trtcap_guards as guards

# Without the plugin nothing answers torch_tensorrt's device queries on a GPU-less host; the plugin's import
# hook would, but both sides use this same conftest.
guards.import_torch_tensorrt()


def pytest_sessionfinish(session):
    drive = session.config.pluginmanager.get_plugin("trtcap-isolation")
    held = sorted(getattr(getattr(drive, "ledger", None), "last", {}) or {})
    module = session.items[0].module if session.items else None
    stamps, cpu = (module.SPAN, module.CPU) if module is not None else ([], [])
    span = stamps[-1] - stamps[0] if len(stamps) > 1 else float("nan")
    cpu_span = cpu[-1] - cpu[0] if len(cpu) > 1 else float("nan")
    with open(os.environ["TRTCAP_BENCH_PROBE"], "a", encoding="utf-8") as f:
        f.write("plugin=%s\\theld=%s\\tbodies=%d\\tspan=%r\\tcpu=%r\\n"
                % (drive is not None, ",".join(held), len(stamps), span, cpu_span))
'''

#: Every test body appends ``perf_counter()`` to the module's ``SPAN`` and ``process_time()`` to its ``CPU``: the
#: same statements on both sides, so the span from the first body to the last is measured identically with the
#: plugin and without (the process's CPU time over it is less moved by other work on a shared machine). Under
#: callgrind (``TRTCAP_BENCH_COUNTER``: the library ``_span_counter`` builds) the first body starts the count of
#: instructions and the last one stops it, so the span is counted exactly, apart from the rest of the process.
_HEAD = ("import ctypes\nimport os\nfrom time import perf_counter as _clock, process_time as _cpu\n\nimport pytest\n\n"
         "SPAN = []\nCPU = []\n_COUNTER = os.environ.get('TRTCAP_BENCH_COUNTER')\n"
         "_MARK = ctypes.CDLL(_COUNTER).span_mark if _COUNTER else None\n_ENDS = {{1: 1, {n}: 0}}\n\n\n")
_BODY = ("    SPAN.append(_clock())\n    CPU.append(_cpu())\n"
         "    if _MARK is not None and len(SPAN) in _ENDS:\n        _MARK(_ENDS[len(SPAN)])\n")


def _trivial(n: int) -> str:
    return _HEAD.format(n=n) + "".join(f"def test_{i:05d}():\n{_BODY}\n\n" for i in range(n))


def _parametrized(n: int) -> str:
    cases = f"[(i, -i) for i in range({n})]"
    return _HEAD.format(n=n) + f"@pytest.mark.parametrize('a, b', {cases})\ndef test_p(a, b):\n{_BODY}"


def _ten_fixtures(n: int) -> str:
    fixtures = "".join(f"@pytest.fixture\ndef f{j}():\n    return {j}\n\n\n" for j in range(10))
    names = ", ".join(f"f{j}" for j in range(10))
    return _HEAD.format(n=n) + fixtures + f"@pytest.mark.parametrize('i', range({n}))\ndef test_t(i, {names}):\n{_BODY}"


class Shape(NamedTuple):
    """A generated suite the plugin's in-run overhead is measured on, against ``-p no:trtcap``."""

    source: Callable[[int], str]  # the test file's text for n tests
    name: str
    label: str  # ``{n}``: the tests; ``{measure}``: what is measured
    target: float
    tests: int  # how many tests the full run generates


SHAPES = {
    "trivial": Shape(_trivial, "isolation_suite",
                     "suite of {n} trivial tests with torch_tensorrt imported ({measure})", SUITE_TARGET, 2000),
    "parametrized": Shape(_parametrized, "suite_parametrized",
                          "suite of {n} parametrized tests (2 arguments each), torch_tensorrt imported ({measure})",
                          SUITE_TARGET, 2000),
    "ten fixtures": Shape(_ten_fixtures, "suite_ten_fixtures",
                          "suite of {n} tests with ten function fixtures each, torch_tensorrt imported ({measure})",
                          TEN_FIXTURES_TARGET, 500),
}
SPAN = "span of the tests: first test body to last, in process, wall time"
PROCESS = "whole process, wall time"


_COUNTER_SOURCE = """#include <valgrind/callgrind.h>
void span_mark(int first) {
    if (first) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
    else { CALLGRIND_STOP_INSTRUMENTATION; CALLGRIND_DUMP_STATS_AT("span"); }
}
"""


def _span_counter(workdir: str) -> str | None:
    """A shared library whose ``span_mark`` starts and stops callgrind's count, built with the C compiler; None
    where valgrind, a compiler or valgrind's headers are missing."""
    import shutil
    import subprocess

    compiler = shutil.which("cc") or shutil.which("gcc")
    if shutil.which("valgrind") is None or compiler is None:
        return None
    source, library = os.path.join(workdir, "span_counter.c"), os.path.join(workdir, "span_counter.so")
    with open(source, "w", encoding="utf-8") as f:
        f.write(_COUNTER_SOURCE)
    built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", library, source], capture_output=True)
    return library if built.returncode == 0 else None


def _span_instructions(cmd: list[str], workdir: str, env: dict[str, str], library: str) -> int:
    """The instructions of the span of ``cmd``'s test bodies, counted by callgrind (started and stopped by the
    first and the last body; the rest of the process runs uncounted)."""
    import glob
    import subprocess

    out = os.path.join(workdir, "callgrind.out")
    for old in glob.glob(out + "*"):
        os.remove(old)
    valgrind = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    proc = subprocess.run(valgrind + cmd, cwd=workdir, env=dict(env, TRTCAP_BENCH_COUNTER=library),
                          capture_output=True, text=True)
    totals = []
    for path in glob.glob(out + "*"):
        with open(path, encoding="utf-8") as f:
            totals += [int(line.split()[1]) for line in f if line.startswith("totals:")]
    if proc.returncode != 0 or not any(totals):
        raise RuntimeError(f"callgrind counted no span for {' '.join(cmd)}:\n{proc.stderr[-2000:]}")
    return max(totals)


def _counted(commands: dict[str, list[str]], workdir: str, env: dict[str, str], shape: Shape,
             n_tests: int) -> Result | None:
    """The span of the same two commands, once each under callgrind with a fixed hash seed: the CPU instructions
    the plugin adds to the tests themselves, a figure the machine's speed drift cannot move (two counts of one
    command agree to a few in a million), checked against the same target."""
    library = _span_counter(workdir)
    if library is None:
        print("span in CPU instructions: left out (needs valgrind, its headers and a C compiler)")
        return None
    seeded = dict(env, PYTHONHASHSEED="0")
    counts = {side: _span_instructions(cmd, workdir, seeded, library) for side, cmd in commands.items()}
    with_plugin, without = counts["plugin"] / 1e6, counts["no plugin"] / 1e6
    label = shape.label.format(n=n_tests, measure="span of the tests, CPU instructions")
    result = Result(f"{shape.name}_instructions", label, with_plugin, without, "M instructions", shape.target,
                    detail={"runs": "1 each under callgrind, counting from the first test body to the last, "
                                    "PYTHONHASHSEED=0",
                            "added": f"{with_plugin - without:.1f} M instructions, "
                                     f"{(with_plugin - without) * 1e6 / n_tests:.0f} a test"})
    print(result.line(), flush=True)
    return result


class Probe(NamedTuple):
    """What one run's conftest wrote: whether the plugin's isolation ran, and the span of the test bodies."""

    plugin: bool
    held: str
    bodies: int
    span: float
    cpu: float


def _read_probes(path: str) -> list[Probe]:
    """The conftest's lines, in the order the runs ended (the runs are sequential)."""
    probes = []
    with open(path, encoding="utf-8") as f:
        for line in f.read().splitlines():
            fields = dict(part.split("=", 1) for part in line.split("\t"))
            probes.append(Probe(fields["plugin"] == "True", fields["held"], int(fields["bodies"]),
                                float(fields["span"]), float(fields.get("cpu", "nan"))))
    return probes


def _spans(probes: list[Probe], runs: int, n_tests: int,
           field: str = "span") -> tuple[dict[str, list[float]], list[str]]:
    """Each side's spans of its last ``runs`` runs (a warm-up's come first; ``field``: ``span``, wall, or ``cpu``,
    the process's CPU time over it), and what is wrong with the probes."""
    sides = {"plugin": [p for p in probes if p.plugin], "no plugin": [p for p in probes if not p.plugin]}
    problems = []
    if len(sides["plugin"]) != len(sides["no plugin"]):
        problems.append(f"the plugin was active in {len(sides['plugin'])} of {len(probes)} runs")
    if any("converter registry" not in p.held.split(",") for p in sides["plugin"]):
        problems.append("isolation did not hold the converter registry in a plugin run")
    if any(p.bodies != n_tests for p in probes):
        problems.append(f"a run did not run its {n_tests} test bodies")
    return {side: [getattr(p, field) for p in kept[-runs:]] for side, kept in sides.items()}, problems


def suite(n_tests: int, runs: int, quick: bool, shape: str = "trivial", count: bool = False) -> list[Result]:
    """The shape's suite run with the plugin and without, interleaved: the span of its test bodies (checked) and
    the whole process (for information); and, with ``count``, the span counted by callgrind."""
    make, name, label, target, _ = SHAPES[shape]
    banner(f"isolation in a suite ({shape}): {n_tests} tests, conftest imports torch_tensorrt, "
           f"{runs} run(s) each side, alternated")
    warmup = 0 if quick else 1
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-suite-") as workdir:
        with open(os.path.join(workdir, "pytest.ini"), "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        with open(os.path.join(workdir, "conftest.py"), "w", encoding="utf-8") as f:
            f.write(_CONFTEST)
        with open(os.path.join(workdir, "test_suite.py"), "w", encoding="utf-8") as f:
            f.write(make(n_tests))
        probe = os.path.join(workdir, "probe.txt")
        env = clean_env(TRTCAP_BENCH_PROBE=probe)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # Python's default, bytecode caches on (this machine sets it)
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py"]
        commands = {"plugin": base, "no plugin": base[:3] + ["-p", "no:trtcap"] + base[3:]}
        times, cpu = interleaved(commands, runs, workdir, env, warmup=warmup)
        spans, problems = _spans(_read_probes(probe), runs, n_tests)
        cpu_spans, _ = _spans(_read_probes(probe), runs, n_tests, "cpu")
        counted = _counted(commands, workdir, env, SHAPES[shape], n_tests) if count else None
    print("command: python -m pytest -q -p no:cacheprovider test_suite.py  vs  ... -p no:trtcap")
    cpu_with, cpu_without = median(cpu["plugin"]), median(cpu["no plugin"])
    cpu_note = f"{cpu_with:.3f} s vs {cpu_without:.3f} s, ratio {cpu_with / cpu_without:.3f}"
    for side in commands:
        print(f"{side}: span median {median(spans[side]):.3f} s (range {spread(spans[side])} s); whole process "
              f"median {median(times[side]):.3f} s (range {spread(times[side])} s)")
    detail = {"runs": f"{runs} each, alternated", "tests": str(n_tests)}
    span_cpu = median(cpu_spans["plugin"]), median(cpu_spans["no plugin"])
    span_cpu_note = (f"{span_cpu[0]:.3f} s vs {span_cpu[1]:.3f} s, ratio {span_cpu[0] / span_cpu[1]:.3f} "
                     f"(per-round median {paired_median(cpu_spans['plugin'], cpu_spans['no plugin']):.3f})")
    print(f"CPU time of the span (process_time, medians): {span_cpu_note}")
    span = Result(name, label.format(n=n_tests, measure=SPAN), median(spans["plugin"]), median(spans["no plugin"]),
                  "s", target, checked=not quick, paired=paired_median(spans["plugin"], spans["no plugin"]),
                  rounds=runs, ratios=per_round(spans["plugin"], spans["no plugin"]), problems=problems,
                  detail=dict(detail, measured="perf_counter() appended by every test body; last minus first",
                              **{"CPU time of the span (process_time, medians)": span_cpu_note}))
    process = Result(f"{name}_process", label.format(n=n_tests, measure=PROCESS), median(times["plugin"]),
                     median(times["no plugin"]), "s", None, checked=not quick,
                     paired=paired_median(times["plugin"], times["no plugin"]), rounds=runs,
                     ratios=per_round(times["plugin"], times["no plugin"]),
                     detail=dict(detail, **{"CPU time (user + system, medians)": cpu_note}))
    for result in (span, process):
        print(result.line(), flush=True)
    return [span, process] + ([counted] if counted is not None else [])


def run(quick: bool = False, iterations: int = 0, tests: int = 0, runs: int = 0, count: bool = True,
        shapes: list[str] | None = None) -> list[Result]:
    """``count``: also count each suite's two sides in CPU instructions, where valgrind is installed (not with
    ``quick``: under valgrind one run of 2,000 tests takes minutes)."""
    iterations = iterations or (300 if quick else 5000)
    runs = runs or (1 if quick else RUNS)
    count = count and not quick
    if not quick and not count:
        print("suites in CPU instructions: left out (--no-count)")
    results = per_test(iterations, quick)
    for shape in shapes or list(SHAPES):
        if quick and shape != "trivial":  # each suite run imports torch_tensorrt (seconds); one shows the harness
            print(f"suite ({shape}): left out (--quick measures the trivial suite only)")
            continue
        n_tests = tests or (20 if quick else SHAPES[shape].tests)
        results += suite(n_tests, runs, quick, shape, count)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no timing assertions")
    parser.add_argument("--iterations", type=int, default=0, help="per-test iterations (default 5000)")
    parser.add_argument("--tests", type=int, default=0,
                        help="tests in each generated suite (default: 2000; 500 with ten fixtures)")
    parser.add_argument("--shape", action="append", choices=list(SHAPES), dest="shapes",
                        help="measure this suite only (repeatable; default: all)")
    parser.add_argument("--runs", type=int, default=0, help=f"suite runs per side (default {RUNS})")
    parser.add_argument("--no-count", action="store_true",
                        help="leave out the suites' CPU instruction counts (valgrind: minutes per run)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.iterations, args.tests, args.runs, not args.no_count, args.shapes)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
