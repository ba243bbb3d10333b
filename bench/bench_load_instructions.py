"""Benchmark: the plugin-load cost counted in CPU instructions, which this machine's noise cannot move.

The wall-time figures of ``bench_plugin_load`` swing by several percent between identical runs on a shared
machine, more than the 2% they are checked against. Valgrind counts the instructions a process executes; with a
fixed hash seed two runs of the same command agree to a few in a million, so the count settles what share of a
``pytest --collect-only -q`` run the plugin adds (CPU work only: no disk or scheduler waits). Measured as there,
with bytecode caches and with a source-only copy under ``PYTHONDONTWRITEBYTECODE=1``; again both ways with every
other installed pytest plugin off on both sides (pytest alone as the baseline); and, as a yardstick,
pytest-xdist's plugin counted the same way, both ways (with against ``-p no:xdist -p no:xdist.looponfail``,
ours off on both sides). And a floor for any layout of the same code: what a dormant session loads, folded into
the plugin's one module where none of it runs, counted without bytecode (what pytest's parse of that much code costs
every run whose bytecode is not cached). For information: the issue's figure is the wall-time one. Needs
``valgrind`` on the path; without it these rows are left out, saying so.

    python bench/bench_load_instructions.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, load_envs, median, per_round, spread, write_one_test

VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


def available() -> bool:
    return shutil.which("valgrind") is not None


def _ran(cmd: list[str], cwd: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``cmd`` run to its end, its output captured; raises, with the output's end, if it fails."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return proc


def instructions(cmd: list[str], cwd: str, env: dict[str, str]) -> int:
    """Instructions executed by ``cmd`` (a fresh process, counted by valgrind); raises if it fails."""
    proc = _ran(VALGRIND + cmd, cwd, env)
    found = _REFS.search(proc.stderr)
    if found is None:
        raise RuntimeError(f"valgrind printed no instruction count for {' '.join(cmd)}:\n{proc.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


#: A smoke run (``--quick``) counts its first pair under valgrind, which shows the counting works; each later pair
#: runs its real commands without valgrind (valgrind makes a run some 30 times slower) and reports their CPU time,
#: saying so. Full runs count every pair.
_SMOKE_COUNTED = [False]
QUICK_UNIT = "ms CPU (--quick: not counted by valgrind)"


def cpu_time_ms(cmd: list[str], cwd: str, env: dict[str, str]) -> float:
    """CPU time (user + system) of ``cmd`` run to its end, in milliseconds; raises if it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    _ran(cmd, cwd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return round((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1e3, 1)


def _pair(name: str, what: str, commands: dict[str, list[str]], rounds: int, cwd: str, env: dict[str, str],
          warm: bool) -> Result:
    if warm:  # writes the bytecode caches the counted runs read
        for cmd in commands.values():
            subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    counts: dict[str, list[float]] = {side: [] for side in commands}
    quick = rounds == 1 and _SMOKE_COUNTED[0]
    for i in range(rounds):
        for side in (list(commands) if i % 2 == 0 else list(reversed(list(commands)))):
            counts[side].append(cpu_time_ms(commands[side], cwd, env) if quick
                                else instructions(commands[side], cwd, env))
    _SMOKE_COUNTED[0] = True
    with_, without = counts["with"], counts["without"]
    if quick:
        print(f"{what}: {median(with_)} vs {median(without)} {QUICK_UNIT}")
        result = Result(name, what, median(with_), median(without), QUICK_UNIT, None, rounds=rounds)
        print(result.line(), flush=True)
        return result
    print(f"{what}: {median(with_) / 1e6:.1f} M instructions (range {spread([c / 1e6 for c in with_])} M) "
          f"vs {median(without) / 1e6:.1f} M (range {spread([c / 1e6 for c in without])} M)")
    result = Result(name, what, median(with_) / 1e6, median(without) / 1e6, "M instructions", None, rounds=rounds,
                    detail={"runs": f"{rounds} each under valgrind (cachegrind, no cache simulation), "
                                    "PYTHONHASHSEED=0",
                            "added": f"{(median(with_) - median(without)) / 1e6:.1f} M instructions",
                            "spread of the per-round ratios": spread(per_round(with_, without))})
    print(result.line(), flush=True)
    return result


def run(quick: bool = False) -> list[Result]:
    if not available():
        print("\n== plugin load in CPU instructions: valgrind is not installed, left out ==", flush=True)
        return []
    rounds = 1 if quick else 2
    banner(f"plugin load in CPU instructions (valgrind): pytest --collect-only -q of a one-test file, {rounds} "
           "run(s) each")
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-instructions-") as workdir:
        cached, uncached, source = load_envs(workdir, PYTHONHASHSEED="0")
        write_one_test(workdir)
        base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "test_one.py"]
        ours = {"with": base, "without": base[:3] + ["-p", "no:trtcap"] + base[3:]}
        results = [
            _pair("plugin_load_instructions", "plugin load, CPU instructions, bytecode caches on", ours, rounds,
                  workdir, cached, warm=True),
            _pair("plugin_load_instructions_no_pyc", "plugin load, CPU instructions, PYTHONDONTWRITEBYTECODE=1, "
                  "source-only copy", ours, rounds, workdir, uncached, warm=False),
        ]
        results.append(_folded_floor(ours, rounds, workdir, uncached, source))
        results += _lean(base, rounds, workdir, cached, uncached)
        results += _xdist_yardstick(base, rounds, workdir, cached)
    return results


_DORMANT_MODULES = """
import json, sys
import pytest
before = set(sys.modules)
import pytest_trtcap.plugin
print(json.dumps({name: module.__file__ for name, module in sys.modules.items()
                  if name not in before and name.split(".")[0] in ("pytest_trtcap", "trtcap_guards")}))
"""


def _folded_floor(ours: dict[str, list[str]], rounds: int, workdir: str, uncached: dict[str, str],
                  source: str) -> Result:
    """The plugin's entry module replaced by the code of every module the entry point loads (the whole dormant
    path, the guard library's package included), inside ``if False:``: parsed and compiled each run as pytest does
    a plugin's modules, none of it run, nothing else imported. Any layout of that code costs at least this much
    without bytecode; only less code can cost less."""
    proc = subprocess.run([sys.executable, "-c", _DORMANT_MODULES], cwd=workdir, env=uncached, capture_output=True,
                          text=True, check=True)
    files = json.loads(proc.stdout)
    folded = os.path.join(workdir, "folded")
    shutil.copytree(source, folded)
    code = []
    for name in sorted(files):
        if name != "pytest_trtcap":  # the package is imported for real, as the entry point's parent
            with open(files[name], encoding="utf-8") as f:
                code.append(f.read().replace("from __future__ import annotations\n", ""))
    with open(os.path.join(folded, "pytest_trtcap", "plugin.py"), "w", encoding="utf-8") as f:
        f.write('"""Folded.\n\nPYTEST_DONT_REWRITE"""\nfrom __future__ import annotations\n\nif False:\n'
                + textwrap.indent("\n".join(code), "    "))
    env = dict(uncached, PYTHONPATH=uncached["PYTHONPATH"].replace(source, folded, 1))  # the folded copy instead
    what = (f"floor for any layout: the {len(code)} modules a dormant session loads folded into one, none of it run, "
            "CPU instructions, PYTHONDONTWRITEBYTECODE=1, source-only copy")
    return _pair("plugin_load_instructions_folded_floor", what, ours, rounds, workdir, env, warm=False)


def _lean(base: list[str], rounds: int, workdir: str, cached: dict[str, str],
          uncached: dict[str, str]) -> list[Result]:
    """The same pair with every other installed pytest plugin off on both sides: pytest alone is the baseline.
    The rows above share their baseline with the environment's other plugins (hypothesis' imports hypothesis in
    every run here), which makes the plugin's share look smaller than it is against pytest alone."""
    from importlib import metadata

    others = sorted({ep.name for ep in metadata.entry_points(group="pytest11")} - {"trtcap"})
    off = [arg for name in others for arg in ("-p", f"no:{name}")]
    lean = {"with": base[:3] + off + base[3:], "without": base[:3] + ["-p", "no:trtcap"] + off + base[3:]}
    what = f"pytest alone as the baseline ({', '.join(others) or 'no other plugin'} off on both sides)"
    return [
        _pair("plugin_load_instructions_lean", f"plugin load, CPU instructions, bytecode caches on, {what}", lean,
              rounds, workdir, cached, warm=True),
        _pair("plugin_load_instructions_lean_no_pyc", "plugin load, CPU instructions, PYTHONDONTWRITEBYTECODE=1, "
              f"source-only copy, {what}", lean, rounds, workdir, uncached, warm=False),
    ]


def _xdist_yardstick(base: list[str], rounds: int, workdir: str, cached: dict[str, str]) -> list[Result]:
    """pytest-xdist's plugin counted as ours is: with its installed bytecode, and from a source-only copy of its
    package under ``PYTHONDONTWRITEBYTECODE=1`` (pytest rewrites a plugin's modules as it does ours)."""
    try:
        import xdist
    except ImportError:
        print("pytest-xdist is not installed: no yardstick rows")
        return []
    off = base[:3] + ["-p", "no:trtcap"] + base[3:]
    commands = {"with": off, "without": off[:3] + ["-p", "no:xdist", "-p", "no:xdist.looponfail"] + off[3:]}
    source = os.path.join(workdir, "xdist-source")
    shutil.copytree(os.path.dirname(xdist.__file__), os.path.join(source, "xdist"),
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    uncached = dict(cached, PYTHONDONTWRITEBYTECODE="1")
    uncached["PYTHONPATH"] = os.pathsep.join((source, cached["PYTHONPATH"]))
    return [
        _pair("xdist_load_instructions", "yardstick: pytest-xdist's plugin, CPU instructions, its installed "
              "bytecode (ours off on both sides)", commands, rounds, workdir, cached, warm=True),
        _pair("xdist_load_instructions_no_pyc", "yardstick: pytest-xdist's plugin, CPU instructions, "
              "PYTHONDONTWRITEBYTECODE=1, source-only copy", commands, rounds, workdir, uncached, warm=False),
    ]


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run per side")
    run(parser.parse_args(argv).quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
