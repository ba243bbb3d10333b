"""Benchmark: what importing the plugin costs after ``pytest``, against hypothesis' pytest plugin in the same run.

``python -X importtime -c "import pytest, importlib.metadata; import PLUGIN"`` in fresh processes, the two
plugins alternated round by round; the figure is the plugin module's cumulative import time (microseconds, the
``-X importtime`` cumulative column), so pytest's own import is outside it. Both statistics are printed: the
median of per-round ratios and the ratio of the medians. The target is an absolute one (<= 8 ms, bytecode caches
on, as an installed wheel has them); the same is measured for information with a source-only copy under
``PYTHONDONTWRITEBYTECODE=1`` (compiled in every process).

    python bench/bench_import_cost.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, load_envs, median, paired_median, per_round, spread

TARGET_MS = 8.0
PLUGINS = {"trtcap": "pytest_trtcap.plugin", "hypothesis": "_hypothesis_pytestplugin"}


def cumulative_us(module: str, env: dict[str, str], cwd: str) -> int:
    """The module's cumulative ``-X importtime`` figure, imported after pytest and importlib.metadata."""
    code = f"import pytest, importlib.metadata; import {module}"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == module and not parts[2].startswith("  "):
            return int(parts[1])
    raise RuntimeError(f"-X importtime printed no line for {module}:\n{proc.stderr[-2000:]}")


def _rounds(runs: int, env: dict[str, str], cwd: str) -> dict[str, list[int]]:
    times: dict[str, list[int]] = {name: [] for name in PLUGINS}
    for module in PLUGINS.values():  # warm-up: writes bytecode caches where allowed
        cumulative_us(module, env, cwd)
    for i in range(runs):
        order = list(PLUGINS.items()) if i % 2 == 0 else list(reversed(PLUGINS.items()))
        for name, module in order:
            times[name].append(cumulative_us(module, env, cwd))
    return times


def _result(name: str, what: str, times: dict[str, list[int]], checked: bool, target: float = None) -> Result:
    ours, theirs = times["trtcap"], times["hypothesis"]
    print(f"{what}")
    for label, times_us in (("pytest_trtcap.plugin:    ", ours), ("_hypothesis_pytestplugin:", theirs)):
        print(f"  {label} median {median(times_us) / 1000:.2f} ms (range {spread([t / 1000 for t in times_us])} ms)")
    result = Result(name, what, median(ours), median(theirs), "us", None, checked=checked,
                    paired=paired_median(ours, theirs), rounds=len(ours), ratios=per_round(ours, theirs),
                    detail={"figure": "cumulative -X importtime of the plugin module, after pytest"})
    if target is not None and checked and median(ours) / 1000 > target:
        result.problems.append(f"plugin import {median(ours) / 1000:.2f} ms > {target:g} ms")
    print(f"  plugin import: {median(ours) / 1000:.2f} ms; target <= {TARGET_MS:g} ms (bytecode caches on)"
          if target is not None else "  (for information)")
    return result


def run(quick: bool = False, runs: int = 0) -> list[Result]:
    runs = runs or (3 if quick else 40)
    banner(f"plugin import cost: python -X importtime -c \"import pytest, importlib.metadata; import PLUGIN\", "
           f"{runs} rounds, trtcap and hypothesis alternated")
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-import-") as workdir:
        cached, uncached, _ = load_envs(workdir)
        with_pyc = _rounds(runs, cached, workdir)
        without_pyc = _rounds(runs, uncached, workdir)
    results = [
        _result("import_cost", "plugin import after pytest, bytecode caches on (ratio: against hypothesis' plugin)",
                with_pyc, checked=not quick, target=TARGET_MS),
        _result("import_cost_no_pyc", "plugin import after pytest, PYTHONDONTWRITEBYTECODE=1, source-only copy "
                "(ratio: against hypothesis' plugin, which keeps its installed bytecode)", without_pyc,
                checked=not quick),
    ]
    for r in results:
        print(r.line(), flush=True)
    return results


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few rounds, no target checked")
    parser.add_argument("--runs", type=int, default=0, help="rounds (default 40, 3 with --quick)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.runs)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
