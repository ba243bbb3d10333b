"""Benchmark: what ``--trtcap-needs-gpu skip`` costs a suite whose tests pass.

A suite of 2,000 trivial passing tests, each run in a fresh process with ``--trtcap-needs-gpu skip`` and with
``--trtcap-needs-gpu fail`` (the default), plus a second ``fail`` side as an A/A control: the three alternate within
each round, their order rotating. The ratio checked is skip's median over fail's (target <= 1.02); the A/A ratio of
medians is the noise of this measurement, and a skip/fail ratio whose distance from 1 is within it is "not
measurable". The conftest does not import torch: a passing test never reaches the host probe, and torch's import
(seconds, varying by tens of percent here) would only add noise to a per-test cost.

    python bench/bench_needs_gpu.py [--quick] [--tests N] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import Result, banner, clean_env, interleaved, median, paired_median, per_round, spread

TARGET = 1.02

_CONFTEST = '''\
import os


def pytest_sessionfinish(session):
    plugin = session.config.pluginmanager.get_plugin("trtcap-session")
    mode = plugin.state.settings.needs_gpu.value if plugin is not None else "no plugin"
    with open(os.environ["TRTCAP_BENCH_PROBE"], "a", encoding="utf-8") as f:
        f.write("needs_gpu=%s needs_gpu_skips=%d\\n" % (mode, len(getattr(plugin, "needs_gpu", {}))))
'''


def suite(n_tests: int, runs: int, quick: bool) -> list[Result]:
    banner(f"--trtcap-needs-gpu skip vs fail: {n_tests} passing tests, "
           f"{runs} round(s) of three runs (skip, fail, fail again)")
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-needs-gpu-") as workdir:
        with open(os.path.join(workdir, "pytest.ini"), "w", encoding="utf-8") as f:
            f.write("[pytest]\n")
        with open(os.path.join(workdir, "conftest.py"), "w", encoding="utf-8") as f:
            f.write(_CONFTEST)
        with open(os.path.join(workdir, "test_passing.py"), "w", encoding="utf-8") as f:
            for i in range(n_tests):
                f.write(f"def test_{i:05d}():\n    pass\n\n")
        probe = os.path.join(workdir, "probe.txt")
        env = clean_env(TRTCAP_BENCH_PROBE=probe, CUDA_VISIBLE_DEVICES="")
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_passing.py"]
        commands = {"skip": base + ["--trtcap-needs-gpu", "skip"], "fail": base + ["--trtcap-needs-gpu", "fail"],
                    "fail (A/A)": base + ["--trtcap-needs-gpu", "fail"]}
        wall, cpu = interleaved(commands, runs, workdir, env, warmup=0 if quick else 1)
        with open(probe, encoding="utf-8") as f:
            probes = sorted(set(f.read().splitlines()))
    on, off, control = (median(wall[name]) for name in ("skip", "fail", "fail (A/A)"))
    noise = abs(control / off - 1)
    ratio = on / off
    measurable = abs(ratio - 1) > noise
    verdict = (f"outside the A/A noise {noise:.3f}" if measurable
               else f"not measurable (|{ratio:.3f} - 1| is within the A/A noise {noise:.3f})")
    print("command: python -m pytest -q -p no:cacheprovider test_passing.py --trtcap-needs-gpu skip  vs  ... fail")
    for name in commands:
        print(f"{name:11s} wall median {median(wall[name]):.3f} s (range {spread(wall[name])} s); "
              f"CPU median {median(cpu[name]):.3f} s")
    cpu_ratio, cpu_aa = median(cpu["skip"]) / median(cpu["fail"]), median(cpu["fail (A/A)"]) / median(cpu["fail"])
    print(f"A/A ratio of medians {control / off:.3f}; skip/fail {ratio:.3f}: {verdict}; probes: {' | '.join(probes)}")
    result = Result("needs_gpu_suite", f"suite of {n_tests} passing tests, --trtcap-needs-gpu skip vs fail (wall)",
                    on, off, "s", TARGET, checked=not quick, paired=paired_median(wall["skip"], wall["fail"]),
                    rounds=runs, ratios=per_round(wall["skip"], wall["fail"]),
                    detail={"runs": f"{runs} each, rotated with an A/A control", "tests": str(n_tests),
                            "per-round median ratio": f"{paired_median(wall['skip'], wall['fail']):.3f}",
                            "A/A control (fail vs fail)": f"{control:.3f} s, ratio of medians {control / off:.3f}",
                            "CPU time (user + system, medians)": f"skip/fail {cpu_ratio:.3f}, A/A {cpu_aa:.3f}",
                            "verdict": verdict})
    expected = {f"needs_gpu={mode} needs_gpu_skips=0" for mode in ("skip", "fail")}
    if set(probes) != expected:
        result.problems.append(f"the runs did not use the setting as intended ({' | '.join(probes)})")
    print(result.line(), flush=True)
    return [result]


def run(quick: bool = False, tests: int = 0, runs: int = 0) -> list[Result]:
    return suite(tests or (20 if quick else 2000), runs or (1 if quick else 15), quick)


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, no timing assertions")
    parser.add_argument("--tests", type=int, default=0, help="tests in the generated suite (default 2000)")
    parser.add_argument("--runs", type=int, default=0, help="rounds (default 15)")
    args = parser.parse_args(argv)
    results = run(args.quick, args.tests, args.runs)
    return 1 if any(r.missed for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
