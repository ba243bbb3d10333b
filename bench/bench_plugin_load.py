"""Benchmark 1: what loading the plugin costs a pytest run.

``pytest --collect-only -q`` of a one-test file in a fresh process, with the plugin (entry point ``trtcap``)
against ``-p no:trtcap``, alternated run by run; the ratio of the medians (checked, <= 1.02) and the median of the
per-round ratios. Measured with Python's default bytecode caching, and again with ``PYTHONDONTWRITEBYTECODE=1`` (a
source-only copy, compiled in every process), both checked. Also checks, in a separate fresh process, that loading
the plugin imports neither torch nor torch_tensorrt.

    python bench/bench_plugin_load.py [--quick] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, clean_env, interleaved, load_envs, median, per_round, spread, write_one_test

TARGET = 1.02  # by the ratio of medians, with and without bytecode caches

_PROBE = r"""
import json, sys, pytest
rc = pytest.main(["--collect-only", "-q", sys.argv[1]])
print("TRTCAP-PROBE " + json.dumps({
    "rc": int(rc),
    "plugin loaded": "pytest_trtcap.plugin" in sys.modules,
    "plugin file": getattr(sys.modules.get("pytest_trtcap.plugin"), "__file__", ""),
    "torch imported": "torch" in sys.modules,
    "torch_tensorrt imported": "torch_tensorrt" in sys.modules,
    "tensorrt imported": any(m == "tensorrt" or m.startswith(("tensorrt.", "tensorrt_rtx")) for m in sys.modules),
}))
"""


def probe_imports(workdir: str, test_file: str, env: dict = None) -> dict:
    proc = subprocess.run([sys.executable, "-c", _PROBE, test_file], cwd=workdir, env=env or clean_env(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("TRTCAP-PROBE "):
            return json.loads(line[len("TRTCAP-PROBE "):])
    raise RuntimeError(f"import probe printed nothing:\n{proc.stdout[-3000:]}")


def _other_plugins() -> str:
    from importlib import metadata

    names = sorted({ep.name for ep in metadata.entry_points(group="pytest11")} - {"trtcap"})
    return ", ".join(names) or "none"


def _measure(label: str, commands: dict, runs: int, workdir: str, env: dict, warmup: int) -> tuple:
    """(median with, median without, median of per-round ratios, CPU text, per-round ratios) of alternated runs."""
    times, cpu = interleaved(commands, runs, workdir, env, warmup=warmup)
    with_plugin, without = median(times["plugin"]), median(times["no plugin"])
    cpu_with, cpu_without = median(cpu["plugin"]), median(cpu["no plugin"])
    ratios = per_round(times["plugin"], times["no plugin"])
    paired = median(ratios)
    print(f"{label}: median of per-round ratios {paired:.3f}")
    print(f"  with plugin:    wall median {with_plugin:.3f} s (range {spread(times['plugin'])} s); "
          f"CPU median {cpu_with:.3f} s")
    print(f"  -p no:trtcap:   wall median {without:.3f} s (range {spread(times['no plugin'])} s); "
          f"CPU median {cpu_without:.3f} s (CPU ratio {cpu_with / cpu_without:.3f})")
    cpu_text = f"{cpu_with:.3f} s vs {cpu_without:.3f} s, ratio {cpu_with / cpu_without:.3f}"
    return with_plugin, without, paired, cpu_text, ratios


#: Runs per side of the plain run (information: the header's share of a default run).
PLAIN_RUNS = 40

SUITE_MODULES, SUITE_TESTS = 20, 2000

_SUITE_MODULE = """
import pytest

pytestmark = pytest.mark.slow

class TestGroup:
    @pytest.mark.parametrize("n", range(40))
    def test_param(self, n):
        pass

@pytest.mark.parametrize("n", range(50))
def test_plain(n):
    pass

@pytest.mark.skipif(False, reason="never")
def test_marked():
    pass

def test_fixture(tmp_path):
    pass
"""  # 40 + 50 + 1 + 1 = 92 tests; padded below to SUITE_TESTS / SUITE_MODULES each


def _measure_suite(workdir: str, env: dict, quick: bool) -> tuple:
    """What a dormant session pays per collector and per test: collect-only of a large suite that uses nothing of
    the plugin (its markers are checked on every collector's report)."""
    suite = os.path.join(workdir, "suite")
    os.makedirs(suite)
    per_module = SUITE_TESTS // SUITE_MODULES
    extra = "".join(f"\ndef test_extra_{i}():\n    pass\n" for i in range(per_module - 92))
    for m in range(SUITE_MODULES):
        with open(os.path.join(suite, f"test_m{m:02d}.py"), "w", encoding="utf-8") as f:
            f.write(_SUITE_MODULE + extra)
    with open(os.path.join(suite, "pytest.ini"), "w", encoding="utf-8") as f:
        f.write("[pytest]\nmarkers =\n    slow: a marker of the project's own\n")
    base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
    commands = {"plugin": base, "no plugin": base[:3] + ["-p", "no:trtcap"] + base[3:]}
    runs = 2 if quick else 30
    times, cpu = interleaved(commands, runs, suite, env, warmup=1)
    ratios = per_round(times["plugin"], times["no plugin"])
    cpu_text = (f"{median(cpu['plugin']):.3f} s vs {median(cpu['no plugin']):.3f} s, ratio "
                f"{median(cpu['plugin']) / median(cpu['no plugin']):.3f}")
    return median(times["plugin"]), median(times["no plugin"]), median(ratios), cpu_text, ratios


def run(quick: bool = False, runs: int = 0) -> list[Result]:
    runs = runs or (2 if quick else 80)  # at least 40; 80 narrow the noise band by a factor sqrt(2)
    runs_no_pyc = runs
    banner(f"plugin load: pytest --collect-only -q of a one-test file, {runs} runs each, alternated")
    # Python writes and reuses bytecode caches by default, and a pip-installed plugin ships them compiled.
    # This machine sets PYTHONDONTWRITEBYTECODE=1, under which every process compiles the plugin's source
    # (pytest's own modules keep the .pyc files pip wrote): measured too, for information.
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-load-") as workdir:
        cached, uncached, source = load_envs(workdir)  # the uncached side loads a source-only copy
        write_one_test(workdir)
        base = [sys.executable, "-m", "pytest", "--collect-only", "-q", "test_one.py"]
        commands = {"plugin": base, "no plugin": base[:3] + ["-p", "no:trtcap"] + base[3:]}
        print(f"command: {' '.join(['python'] + base[1:])}  vs  ... -p no:trtcap")
        # The first (warm-up) run writes the bytecode caches; the timed runs reuse them.
        with_plugin, without, paired, cpu_text, ratios = _measure(
            "bytecode caches on (Python's default)", commands, runs, workdir, cached, warmup=1 if quick else 2)
        raw_with, raw_without, raw_paired, raw_cpu, raw_ratios = _measure(
            "PYTHONDONTWRITEBYTECODE=1 (as set on this machine: the plugin's source is compiled in every process)",
            commands, runs_no_pyc, workdir, uncached, warmup=0 if quick else 1)
        plain = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "test_one.py"]
        plain_with, plain_without, plain_paired, plain_cpu, plain_ratios = _measure(
            "plain run (the test runs, pytest shows its header and ours), bytecode caches on",
            {"plugin": plain, "no plugin": plain[:3] + ["-p", "no:trtcap"] + plain[3:]},
            2 if quick else PLAIN_RUNS, workdir, cached, warmup=1)
        suite_with, suite_without, suite_paired, suite_cpu, suite_ratios = _measure_suite(workdir, cached, quick)
        imports = probe_imports(workdir, "test_one.py")
        uncached_probe = probe_imports(workdir, "test_one.py", uncached)
        if not uncached_probe["plugin file"].startswith(source) or any(
                "__pycache__" in dirs for _, dirs, _ in os.walk(source)):
            raise RuntimeError(f"the uncached measurement did not load a source-only copy: {uncached_probe}")
    shown = {k: v for k, v in imports.items() if k not in ("rc", "plugin file")}
    print("imports at load: " + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in shown.items()))
    if not imports["plugin loaded"]:
        raise RuntimeError("the trtcap plugin was not loaded: is the project installed (pip install -e .)?")
    result = Result(
        "plugin_load", "plugin load: `pytest --collect-only -q`, one-test file, fresh process, wall time",
        with_plugin, without, "s", TARGET, checked=not quick, paired=paired, rounds=runs, ratios=ratios,
        detail={
            "runs": f"{runs} each, alternated, bytecode caches on",
            "CPU time (user + system, medians)": cpu_text,
            "other pytest plugins installed (loaded on both sides)": _other_plugins(),
            "torch imported at load": "yes" if imports["torch imported"] else "no",
            "torch_tensorrt imported at load": "yes" if imports["torch_tensorrt imported"] else "no",
        },
    )
    for key in ("torch imported", "torch_tensorrt imported", "tensorrt imported"):
        if imports[key]:
            result.problems.append(f"{key.split()[0]} was imported while the plugin loaded")
    raw = Result(
        "plugin_load_no_pyc", "plugin load as above with PYTHONDONTWRITEBYTECODE=1 (source compiled every run)",
        raw_with, raw_without, "s", TARGET, checked=not quick, paired=raw_paired, rounds=runs_no_pyc, ratios=raw_ratios,
        detail={"runs": f"{runs_no_pyc} each, alternated", "CPU time (user + system, medians)": raw_cpu},
    )
    plain_run = Result(
        "plugin_load_plain", "plugin load in a plain run: `pytest test_one.py` (runs the test; the report header "
        "shows our line), fresh process, wall time", plain_with, plain_without, "s", None, checked=not quick,
        paired=plain_paired, rounds=len(plain_ratios), ratios=plain_ratios,
        detail={"runs": f"{len(plain_ratios)} each, alternated, bytecode caches on",
                "CPU time (user + system, medians)": plain_cpu},
    )
    suite = Result(
        "plugin_load_suite", f"dormant session: `pytest --collect-only -q` of {SUITE_TESTS} tests in {SUITE_MODULES} "
        "modules (marked and parametrized, none of ours), fresh process, wall time",
        suite_with, suite_without, "s", None, checked=not quick, paired=suite_paired, rounds=len(suite_ratios),
        ratios=suite_ratios,
        detail={"runs": f"{len(suite_ratios)} each, alternated, bytecode caches on",
                "CPU time (user + system, medians)": suite_cpu},
    )
    for r in (result, raw, plain_run, suite):
        print(r.line(), flush=True)
    import bench_import_cost  # the import-time share of the same cost, against hypothesis' plugin

    return [result, raw, plain_run, suite] + bench_import_cost.run(quick)


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few runs, no timing assertions")
    parser.add_argument("--runs", type=int, default=0, help="runs per side (default 80, 2 with --quick)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.runs)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
