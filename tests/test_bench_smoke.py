"""Smoke test of the benchmarks: ``python bench/run_all.py --quick`` runs every one and prints its ratio line.

No timing is asserted (quick mode uses tiny sizes and checks no target); this keeps the benchmarks runnable. Its
first instruction row is counted by valgrind; the other rows run their real commands and report CPU time instead,
saying so (under valgrind they would be most of the suite's time).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_ALL = os.path.join(REPO, "bench", "run_all.py")

#: Every ratio line run_all prints: ``ratio <name>: <ratio> (<figure> vs baseline <figure>; <verdict>)``.
RATIOS = (
    "plugin_load",
    "plugin_load_no_pyc",
    "plugin_load_plain",
    "plugin_load_instructions",  # these seven where valgrind is installed (see below)
    "plugin_load_instructions_no_pyc",
    "plugin_load_instructions_folded_floor",
    "plugin_load_instructions_lean",
    "plugin_load_instructions_lean_no_pyc",
    "xdist_load_instructions",
    "xdist_load_instructions_no_pyc",
    "lightest_trtcap_no_pyc",  # these six where valgrind is installed and pip can install the yardsticks
    "lightest_trtcap",
    "lightest_timeout_no_pyc",
    "lightest_timeout",
    "lightest_randomly_no_pyc",
    "lightest_randomly",
    "import_cost",
    "import_cost_no_pyc",
    "isolation_per_test",
    "isolation_leak",
    "isolation_suite",
    "isolation_suite_process",
    "partition_sm89",
    "partition_sm75_fp16",
    "partition_sm89_from_calls",
    "partition_sm75_from_calls",
    "predicate_sm89",
    "validator_sm89",
    "predicate_sm75",
    "validator_sm75",
    "layer_audit_per_partition",
    "trt_close_tiny",
    "trt_close_small",
    "trt_close_nested",
    "trt_close_large",
    "trt_close_leading_zero_small",
    "trt_close_leading_zero_large",
    "needs_gpu_suite",
)


def test_run_all_quick_prints_every_ratio() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    proc = subprocess.run(
        [sys.executable, RUN_ALL, "--quick"], cwd=REPO, env=env, timeout=900,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-6000:]
    names = RATIOS
    if shutil.which("valgrind") is None:  # the instruction counts need it; they say they are left out
        names = tuple(n for n in RATIOS if "instructions" not in n and not n.startswith("lightest_"))
        assert "valgrind is not installed, left out" in out
    elif "could not install the yardsticks" in out:  # no index to install from: said, and the rest still runs
        names = tuple(n for n in RATIOS if not n.startswith("lightest_"))
    for name in names:
        line = re.search(rf"^ratio {name}: (\d+\.\d+) \(.+ vs baseline .+\)$", out, re.MULTILINE)
        assert line is not None, f"no ratio line for {name}:\n{out[-6000:]}"
        assert float(line.group(1)) > 0
    assert "not checked (--quick)" in out
    if "plugin_load_instructions" in names:
        counted = re.search(r"^ratio plugin_load_instructions: \S+ \(\d+ M instructions vs baseline \d+ M", out, re.M)
        assert counted is not None, out[-6000:]
        others = [n for n in names if "instructions" in n or n.startswith("lightest_")][1:]
        assert all(re.search(rf"^ratio {n}: .+ms CPU \(--quick: not counted by valgrind\)", out, re.M)
                   for n in others), out[-6000:]
    assert "crashed: none" in out
    for shape in ("parametrized", "ten fixtures"):  # their harness is the trivial one's; their sources: below
        assert f"suite ({shape}): left out (--quick measures the trivial suite only)" in out
    if os.path.exists(os.path.join(REPO, "bench", "bench_compare.py")):
        assert "bench_compare: exit 0" in out, out[-6000:]


def test_the_instruction_counts_are_left_out_saying_so_where_valgrind_is_missing(tmp_path) -> None:
    """A machine without valgrind still runs every other benchmark: the instruction rows say why they are absent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    env["PATH"] = str(tmp_path)  # nothing on it: no valgrind
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "bench_load_instructions.py"), "--quick"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "valgrind is not installed, left out" in proc.stdout
    assert "ratio plugin_load_instructions" not in proc.stdout


@pytest.mark.parametrize("shape", ["trivial", "parametrized", "ten fixtures"])
def test_each_suite_shape_is_n_passing_tests_of_its_kind(pytester: pytest.Pytester, shape: str) -> None:
    """The suites the full run times (``--quick`` runs only the trivial one): n tests, all passing, with the
    arguments or fixtures their name promises, each body stamping the span the benchmark measures."""
    sys.path.insert(0, os.path.join(REPO, "bench"))
    try:
        import bench_isolation
    finally:
        sys.path.remove(os.path.join(REPO, "bench"))
    pytester.makepyfile(test_suite=bench_isolation.SHAPES[shape].source(7))
    pytester.makeconftest("""
def pytest_sessionfinish(session):
    if session.items and hasattr(session.items[0].module, "SPAN"):
        stamps = session.items[0].module.SPAN
        cpu = session.items[0].module.CPU
        print("stamps", len(stamps), len(cpu), "ordered", stamps == sorted(stamps) and cpu == sorted(cpu))
""")
    result = pytester.runpytest_inprocess("-p", "no:trtcap", "-p", "no:cacheprovider", "--setup-plan")
    result.assert_outcomes()  # --setup-plan runs nothing: the plan lists each test's fixtures
    plan = result.stdout.str()
    assert plan.count("test_suite.py::") == 7
    fixtures = {"trivial": [], "parametrized": ["a", "b"], "ten fixtures": [f"f{j}" for j in range(10)]}[shape]
    for name in fixtures:
        assert plan.count(f"SETUP    F {name}") == 7, plan
    run = pytester.runpytest_inprocess("-p", "no:trtcap", "-p", "no:cacheprovider", "-s")
    assert run.ret == 0
    run.stdout.fnmatch_lines(["*stamps 7 7 ordered True*"])  # every body stamps the span, in order
