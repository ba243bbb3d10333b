"""The GPU-less capability lane: an unmodified Torch-TensorRT-style suite (``tests/lane_suite``) runs under the
plugin on a host without a CUDA device.

Each scenario is one ``pytest`` subprocess on the real stack (it imports torch_tensorrt: several seconds each), run
once per module and shared by the tests that read it. The 8.9 and 7.5 runs are the docs' recipe lines
(docs/cpu-lane.md), run as written in the suite repository the recipe assumes (``tests/test_lane_recipe.py``), plus
``-rA`` and a JUnit XML report, which change only what is reported:

* ``--trt-target-sm 8.9``: everything passes.
* ``--trt-target-sm 7.5``: exactly the hard-coded counts of the models with an FP32 ``nn.Linear`` head fail; the
  atomic-subgraph test that fails leaks its pattern, the plugin names it and puts ``ATOMIC_SUBGRAPHS`` back, so the
  tests after it pass.
* ``-p no:trtcap`` at 7.5 (the suite's conftest answers the device queries and installs the guards itself,
  ``LANE_SELF_SHIM=1``): the same leak cascades into every later resource-partitioning test.
* ``--trtcap-gpu-less-import off``: collection fails with Torch-TensorRT's own no-driver error.

The 8.9 and 7.5 runs use ``--trtcap-needs-gpu skip``, as the docs' lane recipe does: the tests that need a GPU
(``lane_004``: a tensor moved to CUDA, an engine built through ``torch.compile``, a CUDA-only kernel; ``lane_005``:
a module that queries the device at import) are ``trtcap: needs a GPU`` skips, and a real failure next to them
(at 7.5 the hard-coded count that ``lane_004``'s first test checks before it moves to CUDA) stays a failure. A run
with the default ``fail`` (``--continue-on-collection-errors``, else the module's collection error interrupts the
session) shows each of them as the failure it is without the setting.

The subprocesses hide any CUDA device (``CUDA_VISIBLE_DEVICES=""``), so the lane is GPU-less on every host.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_lane_recipe import SUITE_PATH, recipe, run_line

import trtcap_guards as guards

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("torch_tensorrt") is None, reason="the lane runs the real Torch-TensorRT"
)

LANE = Path(__file__).resolve().parent / "lane_suite"

RESOURCE = "lane_000_resource_partitioning.py::TestResourcePartitioning::test_resource_partitioning"
ATOMIC = "lane_000_resource_partitioning.py::TestResourcePartitioning::test_resource_partitioning_with_atomic_subgraphs"
GLOBAL = (
    "lane_001_global_resource_partitioning.py::TestGlobalResourcePartitioning::"
    "test_resource_partitioning_with_global_capability_partitioning"
)
MIXIN_COUNTS = (
    "lane_002_capability_mixin.py::TestCapabilityAwareResourcePartitioning::test_expected_counts_follow_the_targets"
)
MIXIN_DTYPE = (
    "lane_002_capability_mixin.py::TestCapabilityAwareResourcePartitioning::test_turing_safe_head_stays_on_tensorrt"
)
REGISTRY = "lane_003_converter_registry.py::TestConverterRegistry::"
REGISTRY_LEAKER = REGISTRY + "test_000_registers_a_converter_and_leaves_it"
REGISTRY_TESTS = [REGISTRY + name for name in (
    "test_000_registers_a_converter_and_leaves_it",
    "test_001_registry_is_as_before",
    "test_002_fixture_scoped_converter",
    "test_003_registry_is_as_before",
)]
PARTITION_TESTS = [RESOURCE, ATOMIC, GLOBAL, MIXIN_COUNTS, MIXIN_DTYPE, *REGISTRY_TESTS]
NEEDS_GPU = "lane_004_needs_gpu.py::TestNeedsGpu::"
HEAD_ON_CUDA = NEEDS_GPU + "test_partitioned_head_runs_on_cuda"
ENGINE = NEEDS_GPU + "test_engine_build_through_torch_compile"
KERNEL = NEEDS_GPU + "test_efficient_attention_kernel"
DEVICE_QUERY_MODULE = "lane_005_device_query.py"
ALL_TESTS = [*PARTITION_TESTS, HEAD_ON_CUDA, ENGINE, KERNEL]
#: What needs a GPU, and the signature that says so, at 8.9 (at 7.5 HEAD_ON_CUDA fails on its count first).
NEEDS_GPU_AT_89 = {HEAD_ON_CUDA: "cuda-init", ENGINE: "trt-engine", KERNEL: "cuda-only-kernel",
                   DEVICE_QUERY_MODULE: "cuda-init"}
NEEDS_GPU_PREFIX = "trtcap: needs a GPU: "

#: Tests whose hard-coded counts include the trailing FP32 ``nn.Linear`` (the fp32_gemm guard's target).
FP32_HEAD_HARD_CODED = {RESOURCE, ATOMIC}
ATOMIC_ENTRY = "added ATOMIC_SUBGRAPHS entry (ReLUConv, (), True)"


@dataclass
class LaneRun:
    args: list[str]
    returncode: int
    output: str
    outcomes: dict[str, list[str]]  # nodeid -> junit results ("passed", "failure", "error", "skipped")
    reasons: dict[str, str]  # nodeid -> skip message

    def outcome(self, nodeid: str) -> str:
        results = self.outcomes.get(nodeid)
        assert results is not None, f"{nodeid} did not run\n{self.tail()}"
        return "failed" if "failure" in results else ("error" if "error" in results else results[0])

    def with_outcome(self, outcome: str) -> set:
        return {nodeid for nodeid in self.outcomes if self.outcome(nodeid) == outcome}

    def section(self, title: str) -> list[str]:
        """Lines of a ``---- title ----`` section of the terminal report."""
        lines = self.output.splitlines()
        head = re.compile(rf"^-+ {re.escape(title)} -+$")
        start = next((i for i, line in enumerate(lines) if head.match(line)), None)
        if start is None:
            return []
        out = []
        for line in lines[start + 1:]:
            if re.match(r"^(=|-){3,} ", line):
                break
            out.append(line)
        return out

    def lines_starting(self, prefix: str) -> list[str]:
        return [line for line in self.output.splitlines() if line.startswith(prefix)]

    def tail(self, n: int = 80) -> str:
        return "\n".join(self.output.splitlines()[-n:])


def _parse_junit(path: Path) -> tuple[dict[str, list[str]], dict[str, str]]:
    """(nodeid -> results, nodeid -> skip message); a module's collection report has no classname."""
    if not path.exists():
        return {}, {}
    outcomes: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        module, _, cls = case.get("classname", "").rpartition(".")
        if case.get("classname"):
            nodeid = f"{module.replace('.', '/')}.py::{cls}::{case.get('name')}"
        else:
            nodeid = f"{case.get('name', '').replace('.', '/')}.py"
        results = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        outcomes[nodeid] = results or ["passed"]
        for child in case:
            if child.tag == "skipped":
                reasons[nodeid] = _skip_message(child)
    return outcomes, reasons


def _skip_message(skipped: ET.Element) -> str:
    """A test's skip message; for a skipped module, junit writes "collection skipped" and the report's
    ``(path, line, "Skipped: reason")`` as the element's text."""
    message = skipped.get("message", "")
    if message == "collection skipped" and skipped.text:
        return str(ast.literal_eval(skipped.text)[2]).removeprefix("Skipped: ")
    return message


def run_lane(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> LaneRun:
    """``python -m pytest tests/lane_suite ARGS`` in a clean environment with no visible CUDA device."""
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TRTCAP_", "PYTEST_", "LANE_")) and k != "CUDA_VISIBLE_DEVICES"}
    clean["CUDA_VISIBLE_DEVICES"] = ""
    clean.update(env or {})
    junit = tmp_path / "lane.xml"
    cmd = [sys.executable, "-m", "pytest", str(LANE), "-rA", f"--junitxml={junit}", *args]
    proc = subprocess.run(cmd, cwd=str(LANE.parent.parent), env=clean, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    return LaneRun(list(args), proc.returncode, proc.stdout, *_parse_junit(junit))


@pytest.fixture(scope="module")
def suite_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the recipe assumes: this checkout at ``./pytest-trtcap``, the lane suite at ``SUITE_PATH``."""
    repo = tmp_path_factory.mktemp("suite-repository")
    (repo / "pytest-trtcap").symlink_to(LANE.parent.parent, target_is_directory=True)
    shutil.copytree(LANE, repo / SUITE_PATH, ignore=shutil.ignore_patterns("__pycache__"))
    return repo


def run_recipe(repo: Path, sm: str) -> LaneRun:
    """The recipe's ``pytest`` line for ``sm``, as written, in ``repo`` (plus ``-rA`` and a JUnit XML report)."""
    line = next(line for line in recipe() if line.startswith("pytest ") and f"--trt-target-sm {sm} " in line)
    junit = repo.parent / f"{repo.name}-{sm}.xml"
    proc = run_line(line, repo, ["-rA", f"--junitxml={junit}"])
    return LaneRun(shlex.split(line)[1:], proc.returncode, proc.stdout, *_parse_junit(junit))


@pytest.fixture(scope="module")
def lane_89(suite_repository: Path) -> LaneRun:
    return run_recipe(suite_repository, "8.9")


@pytest.fixture(scope="module")
def lane_75(suite_repository: Path) -> LaneRun:
    return run_recipe(suite_repository, "7.5")


@pytest.fixture(scope="module")
def lane_89_needs_gpu_fail(tmp_path_factory: pytest.TempPathFactory) -> LaneRun:
    return run_lane(tmp_path_factory.mktemp("lane89fail"), "--trt-target-sm", "8.9", "--continue-on-collection-errors")


@pytest.fixture(scope="module")
def lane_75_without_plugin(tmp_path_factory: pytest.TempPathFactory) -> LaneRun:
    return run_lane(tmp_path_factory.mktemp("lane75np"), "-p", "no:trtcap", "--continue-on-collection-errors",
                    env={"LANE_SELF_SHIM": "1", guards.ENV_TARGETS: "7.5"})


def _leaks(run: LaneRun) -> dict[str, str]:
    """nodeid -> what leaked, from the ``trtcap`` summary section."""
    out = {}
    for line in run.section("trtcap"):
        m = re.match(r"^  (\S+) -> (.*)$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def _turing(target: str) -> bool:
    with guards.declare_targets(target, origin="test_lane"):
        return guards.trt_rtx_targets_turing()


# --- 8.9: the lane is green ----------------------------------------------------------------------------


def test_at_89_everything_passes_but_what_needs_a_gpu(lane_89: LaneRun) -> None:
    assert lane_89.returncode == 0, lane_89.tail()
    assert sorted(lane_89.outcomes) == sorted([*ALL_TESTS, DEVICE_QUERY_MODULE])
    assert lane_89.with_outcome("passed") == set(PARTITION_TESTS), lane_89.tail()
    assert lane_89.with_outcome("skipped") == set(NEEDS_GPU_AT_89), lane_89.tail()


def test_header_says_the_import_was_answered_with_the_target(lane_89: LaneRun, lane_75: LaneRun) -> None:
    for run, target, turing in ((lane_89, "8.9", "no"), (lane_75, "7.5", "yes")):
        header = run.lines_starting("trtcap: ")
        assert len(header) == 1, header  # a default run shows one header line
        assert re.fullmatch(
            rf"trtcap: targets: {re.escape(target)} \(from --trt-target-sm\); backend: rtx \(detected\); "
            rf"targets Turing on TensorRT-RTX: {turing}; guards: installed \(\d+ targets; on, default\)",
            header[0],
        ), header
        assert f"gpu-less import: applied (device queries answered with {target})" in run.section("trtcap")


def test_at_89_no_leak_is_reported(lane_89: LaneRun) -> None:
    """The atomic test cleaned up after itself at 8.9; the converter test_000 leaves is put back by the suite's own
    reset fixture (function-scoped, autouse) before the test ends: by the contract that is its clean-up."""
    assert _leaks(lane_89) == {}
    assert lane_89.outcome(REGISTRY_LEAKER) == "passed"
    assert not any(line.startswith("guards fired:") for line in lane_89.section("trtcap"))


def test_contributing_says_exactly_what_leaks_in_the_lane(lane_89: LaneRun, lane_75: LaneRun) -> None:
    """The lane commands' comments in CONTRIBUTING.md count the leaks each run reports, and the text names each."""
    guide = (LANE.parent.parent / "CONTRIBUTING.md").read_text(encoding="utf-8")
    flat = " ".join(guide.split())
    for run, target in ((lane_89, "8.9"), (lane_75, "7.5")):
        lines = guide.splitlines()
        start = next(i for i, line in enumerate(lines)
                     if line.startswith(f"pytest tests/lane_suite --trt-target-sm {target} --trtcap-needs-gpu skip"))
        comment = " ".join(line.strip() for line in lines[start + 1:start + 3] if line.strip().startswith("#"))
        command = f"{lines[start]} {comment}"
        counted = re.search(r"(\d+) leaks? named and restored", command)
        leaks = _leaks(run)
        assert counted and int(counted.group(1)) == len(leaks), (command, leaks)
        for nodeid, what in leaks.items():
            assert f"`{what}`" in flat, what
            assert nodeid.split(".py::")[0][:8] in flat, nodeid  # the lane file, e.g. lane_003


def _summary(output: str) -> str:
    last = output.strip().splitlines()[-1]
    return re.sub(r"^=+ |(, \d+ warnings?)? in [\d.]+s.*$", "", last)  # the leak warnings: the tests below


@pytest.mark.parametrize("sm, status, summary, failed", [
    ("8.9", 0, "9 passed, 4 skipped", set()),
    ("7.5", 1, "3 failed, 7 passed, 3 skipped", {RESOURCE, ATOMIC, HEAD_ON_CUDA}),
])
def test_the_recipe_runs_as_written(request: pytest.FixtureRequest, sm: str, status: int, summary: str,
                                    failed: set) -> None:
    """No test fails for want of a GPU; at 7.5 only the counts hard-coded for an FP32-GEMM GPU fail."""
    run: LaneRun = request.getfixturevalue("lane_89" if sm == "8.9" else "lane_75")
    assert run.returncode == status, run.tail()
    assert _summary(run.output) == summary, run.tail()
    failures = {m.group(1) for m in re.finditer(r"^FAILED (\S+)", run.output, re.M)}
    assert failures == {f"{SUITE_PATH}/{nodeid}" for nodeid in failed}, run.tail()  # relative to cwd
    assert "needs a GPU: " in run.output


# --- 7.5: failures exactly where the predicate says, the leak contained and named ------------------------


def test_at_75_the_fp32_head_counts_fail_where_the_predicate_says(lane_75: LaneRun) -> None:
    assert _turing("7.5") and not _turing("8.9")
    assert lane_75.returncode == 1, lane_75.tail()
    assert lane_75.with_outcome("failed") == FP32_HEAD_HARD_CODED | {HEAD_ON_CUDA}, lane_75.tail()
    assert lane_75.with_outcome("passed") == set(PARTITION_TESTS) - FP32_HEAD_HARD_CODED
    assert not lane_75.with_outcome("error")
    # Both fail on the non-accelerated count: the head is its own PyTorch block; the conv engines are unchanged.
    # (counted on the traceback's "E" lines: with CI set, pytest also prints the message in the summary)
    message = "AssertionError: 3 != 2 : The graph should have 2 non-accelerated subgraphs"
    assert sum(line.startswith("E ") and message in line for line in lane_75.output.splitlines()) == 2
    assert "_run_on_gpu_5: aten.linear.default" in lane_75.output
    fired = [line for line in lane_75.section("trtcap") if line.startswith("guards fired:")]
    assert fired and re.search(r"fp32_gemm on aten\.linear\.default x\d+", fired[0]), lane_75.section("trtcap")


def test_at_75_the_leaked_pattern_is_named_and_does_not_cascade(lane_75: LaneRun) -> None:
    leaks = _leaks(lane_75)
    assert leaks == {ATOMIC: ATOMIC_ENTRY}  # the converter: put back by the suite's reset fixture, as at 8.9
    assert "leaks: 1 test left global state changed (restored)" in lane_75.section("trtcap")
    assert f"TrtcapLeakWarning: {ATOMIC} leaked global state: {ATOMIC_ENTRY}" in lane_75.output
    # The tests after it would fail only because of the pattern: restored, they pass.
    for nodeid in (GLOBAL, MIXIN_COUNTS, MIXIN_DTYPE):
        assert lane_75.outcome(nodeid) == "passed", lane_75.tail()


def test_without_the_plugin_the_leak_cascades(lane_75_without_plugin: LaneRun) -> None:
    """Same guards at 7.5, no plugin isolation: the atomic pattern stays registered and breaks every later
    resource-partitioning test; the converter-registry tests still pass (the suite's own fixture covers that)."""
    run = lane_75_without_plugin
    assert run.returncode == 1, run.tail()
    cascade = {RESOURCE, ATOMIC, GLOBAL, MIXIN_COUNTS, MIXIN_DTYPE}
    assert run.with_outcome("failed") == cascade | {HEAD_ON_CUDA, ENGINE, KERNEL}, run.tail()
    assert run.with_outcome("error") == {DEVICE_QUERY_MODULE}  # nothing turns a device need into a skip
    assert run.with_outcome("passed") == set(REGISTRY_TESTS)
    assert "AssertionError: 2 != 4 : The graph should have 4 accelerated subgraphs" in run.output
    assert "PartitionCounts(acc=3, gpu=3) != PartitionCounts(acc=5, gpu=3)" in run.output
    assert run.section("trtcap") == [] and not run.lines_starting("trtcap: ")


# --- coexistence with the suite's own reset fixture ------------------------------------------------------


def test_coexists_with_the_suites_reset_fixture(lane_89: LaneRun, lane_75: LaneRun) -> None:
    """No teardown error (the fixture-scoped converter was still there for its fixture to remove), no leak
    reported for it, and the registry is as before after both the leaking and the fixture-scoped test."""
    for run in (lane_89, lane_75):
        for nodeid in REGISTRY_TESTS:
            assert run.outcome(nodeid) == "passed", run.tail()
        assert not run.with_outcome("error"), run.tail()  # a teardown error would be an "error" in junit
        assert REGISTRY + "test_002_fixture_scoped_converter" not in _leaks(run)


# --- TrtCapabilityMixin in a unittest suite ----------------------------------------------------------------


def test_capability_mixin_at_75_and_89(lane_89: LaneRun, lane_75: LaneRun) -> None:
    for run, turing, counts, dtype, origin in (
        (lane_89, False, "(5, 2)", "torch.float32", "targets 8.9 from --trt-target-sm"),
        (lane_75, True, "(5, 3)", "torch.float16", "targets 7.5 from --trt-target-sm"),
    ):
        assert run.outcome(MIXIN_COUNTS) == run.outcome(MIXIN_DTYPE) == "passed"
        mixin = run.lines_starting("lane-mixin: ")
        assert f"lane-mixin: trt_targets_turing={turing} expected={counts} ({origin})" in mixin, mixin
        assert f"lane-mixin: turing_safe_gemm_dtype={dtype}" in mixin, mixin


# --- the plugin is what makes it run --------------------------------------------------------------------------


def test_gpu_less_import_off_fails_collection_with_torch_tensorrts_own_error(tmp_path: Path) -> None:
    run = run_lane(tmp_path, "--trt-target-sm", "8.9", "--trtcap-gpu-less-import", "off")
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.tail()
    assert f"ImportError while loading conftest '{LANE / 'conftest.py'}'" in run.output
    assert "in is_tegra_platform" in run.output  # Torch-TensorRT's own import-time device query
    assert re.search(r"RuntimeError: (Found no NVIDIA driver|No CUDA GPUs are available)", run.output), run.tail()
    assert run.outcomes == {}


# --- tests that need a GPU: skipped under --trtcap-needs-gpu skip, failures under fail ---------------------------


def _line_of(module: str, snippet: str) -> int:
    lines = (LANE / module).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if snippet in line)


def test_each_way_of_needing_a_gpu_is_a_needs_a_gpu_skip(lane_89: LaneRun) -> None:
    """The reason names the test's own line, the error's first line, and the signature."""
    where = {
        HEAD_ON_CUDA: (
            "lane_004_needs_gpu.py", "model, x = model.cuda(), x.cuda()", "RuntimeError: Found no NVIDIA driver"
        ),
        ENGINE: ("lane_004_needs_gpu.py", "self.assertEqual(compiled(", "AssertionError: `assert cuda_engine` in "
                 "torch_tensorrt.dynamo.conversion._TRTInterpreter"),
        KERNEL: ("lane_004_needs_gpu.py", "out = torch.ops.aten._scaled_dot_product_efficient_attention",
                 "NotImplementedError: Could not run 'aten::_scaled_dot_product_efficient_attention' with arguments "
                 "from the 'CPU' backend."),
        DEVICE_QUERY_MODULE: ("lane_005_device_query.py", "torch.cuda.get_device_properties(",
                              "RuntimeError: Found no NVIDIA driver"),
    }
    for nodeid, (module, snippet, error) in where.items():
        reason = lane_89.reasons.get(nodeid, "")
        assert reason.startswith(f"{NEEDS_GPU_PREFIX}{module}:{_line_of(module, snippet)}: {error}"), (nodeid, reason)
        assert reason.endswith(f"(signature: {NEEDS_GPU_AT_89[nodeid]})"), reason
    assert "needs a GPU: 4 (cuda-init: 2, cuda-only-kernel: 1, trt-engine: 1)" in lane_89.section("trtcap")


def test_at_75_a_real_failure_next_to_them_stays_a_failure(lane_75: LaneRun) -> None:
    """At 7.5 the head test's hard-coded count fails before it reaches CUDA: a failure, not a skip."""
    assert lane_75.outcome(HEAD_ON_CUDA) == "failed"
    assert "AssertionError: 2 != 0 : The graph should have no non-accelerated subgraph" in lane_75.output
    assert lane_75.with_outcome("skipped") == set(NEEDS_GPU_AT_89) - {HEAD_ON_CUDA}, lane_75.tail()
    assert "needs a GPU: 3 (cuda-init: 1, cuda-only-kernel: 1, trt-engine: 1)" in lane_75.section("trtcap")


def test_under_fail_each_of_them_is_a_failure(lane_89_needs_gpu_fail: LaneRun) -> None:
    run = lane_89_needs_gpu_fail
    assert run.returncode == 1, run.tail()
    assert run.with_outcome("failed") == {HEAD_ON_CUDA, ENGINE, KERNEL}, run.tail()
    assert run.with_outcome("error") == {DEVICE_QUERY_MODULE}, run.tail()
    assert run.with_outcome("passed") == set(PARTITION_TESTS)
    assert not run.reasons and NEEDS_GPU_PREFIX not in run.output
    assert "BackendCompilerFailed" in run.output and "assert cuda_engine" in run.output


def test_gpu_less_import_off_makes_a_test_modules_import_a_collection_error(pytester: pytest.Pytester,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cpu-lane.md: from a test module (not a conftest), the failing import is that module's collection error."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    pytester.makepyfile(test_imports="import torch_tensorrt\n\ndef test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("--trt-target-sm", "8.9", "--trtcap-gpu-less-import", "off")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_imports.py*", "*Found no NVIDIA driver*"])
