"""The report header and the ``trtcap`` terminal summary section, before and after torch_tensorrt is imported.

Fresh processes (``runpytest_subprocess``): what the header says depends on what this process has imported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import trtcap_guards as guards

RECIPE = Path(__file__).with_name("plugin_recipe.py")
INSTALLED = guards.torch_tensorrt_version()  # read from the distribution, without importing it



MARKED = """
import pytest


@pytest.mark.trt_fp32_gemm
def test_fp32_gemm():
    pass


@pytest.mark.trt_bf16
class TestBf16:
    def test_one(self):
        pass

    def test_two(self):
        pass


@pytest.mark.trt_conv3d
def test_conv3d():
    pass


def test_plain():
    pass
"""

IMPORT_WITHOUT_ANSWERS = """
import pytest


def test_import_fails_without_a_device_when_gpu_less_import_is_off():
    with pytest.raises(RuntimeError, match="NVIDIA driver"):
        import torch_tensorrt  # noqa: F401
"""


def test_header_and_summary_before_torch_tensorrt_is_imported_and_with_gpu_less_import_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_marked=MARKED, test_import=IMPORT_WITHOUT_ANSWERS)
    monkeypatch.setenv("TRTCAP_TARGET_SM", "8.9,7.5")
    monkeypatch.setenv("TRTCAP_NEUTRALIZE", "aten.linear.default")
    monkeypatch.setenv("TRTCAP_GPU_LESS_IMPORT", "off")  # nothing answers the device queries: the import fails
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-strict", "-v")
    result.assert_outcomes(passed=2, skipped=4)
    result.stdout.fnmatch_lines([
        "trtcap: targets: 8.9,7.5 (from TRTCAP_TARGET_SM); backend: rtx (detected); "
        "targets Turing on TensorRT-RTX: yes; guards: on (default; installed when torch_tensorrt is imported)",
        f"trtcap: torch-tensorrt {INSTALLED} (no upstream Turing guards)",
        "trtcap: neutralized: aten.linear.default (from TRTCAP_NEUTRALIZE)",
        "trtcap: gpu-less import: off (from TRTCAP_GPU_LESS_IMPORT); isolation: strict (from --trtcap-strict)",
    ])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "capability skips: 4 (trt_bf16: 2, trt_conv3d: 1, trt_fp32_gemm: 1)",
        "neutralized guards: aten.linear.default",
        "=* 2 passed, 4 skipped in *",
    ])
    output = result.stdout.str()
    for absent in ("leaks:", "guards fired:", "gpu-less import: applied"):
        assert absent not in output


def test_no_summary_section_when_there_is_nothing_to_say(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MARKED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "8.9", "-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines([
        "trtcap: neutralized: none",
        "trtcap: gpu-less import: auto (default; answers device queries only if torch_tensorrt is imported "
        "without a CUDA device); isolation: warn (default)",
    ])
    result.stdout.fnmatch_lines(["trtcap: targets: 8.9 (from --trt-target-sm);*Turing on TensorRT-RTX: no; guards: *"])
    assert "- trtcap -" not in result.stdout.str()


PLAIN = """
def test_plain():
    pass
"""


def _trtcap_lines(result: pytest.RunResult) -> list:
    """Every line of ours: header lines and the summary section (pytest's own "plugins:" line aside)."""
    return [line for line in result.stdout.lines if "trtcap" in line and not line.startswith("plugins:")]


def test_an_unrelated_run_shows_one_header_line_and_no_summary(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    lines = _trtcap_lines(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith("trtcap: targets: not declared (host device decides at first use); backend: ")
    assert "; targets Turing on TensorRT-RTX: pending host device; guards: on (default; installed when " in lines[0]


def test_verbose_shows_every_header_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    header = [line for line in _trtcap_lines(result) if line.startswith("trtcap: ")]
    prefixes = ("trtcap: targets: ", f"trtcap: torch-tensorrt {INSTALLED} (", "trtcap: neutralized: none",
                "trtcap: builder targets: ", "trtcap: gpu-less import: ", "trtcap: needs a GPU: fail (default; ")
    assert len(header) == len(prefixes), header
    assert all(line.startswith(prefix) for line, prefix in zip(header, prefixes)), header


def test_quiet_shows_no_trtcap_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(PLAIN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=1)
    assert _trtcap_lines(result) == []


# torch_tensorrt imported by the conftest at module level, plainly: the plugin armed its hook before
# conftests load, so the import works here without a GPU and the guards are installed at configure.
IMPORTING_CONFTEST = """
import torch_tensorrt  # noqa: F401
"""

REPORT_SUITE = """
import pytest
import torch
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import register_atomic_subgraph

import trtcap_guards as guards
import plugin_recipe
from pytest_trtcap import assert_partition_counts, count_partitions


class Matmul(torch.nn.Module):
    def forward(self, x, w):
        return torch.relu(torch.mm(x, w))


class Late(torch.nn.Module):
    def forward(self, x):
        return torch.ops.aten.relu.default(x)


def test_device_queries_answered_with_the_first_declared_target():
    assert torch.cuda.get_device_capability() == (7, 5)
    assert not torch.cuda.is_available()  # decisions never read the answers: no device is pretended


def test_linear_guarded(expected_partition_counts):
    pm, _, _ = plugin_recipe.partition()
    assert_partition_counts(pm, expected_partition_counts(default=(1, 0), turing=(1, 2)))


def test_neutralized_mm_stays_on_tensorrt():
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo._settings import CompilationSettings
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
    from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering

    args = (torch.randn(2, 8), torch.randn(8, 4))
    ep = torch.export.export(Matmul(), args).run_decompositions(get_decompositions(False))
    gm = post_lowering(ep.module(), CompilationSettings(min_block_size=1))
    assert "aten.mm.default" in [str(n.target) for n in gm.graph.nodes]
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(min_block_size=1))
    pm, _ = partitioning.fast_partition(gm, min_block_size=1)
    assert count_partitions(pm) == (1, 0)


@pytest.mark.trt_fp32_gemm
def test_skipped_gemm():
    pass


@pytest.mark.trt_cdist_matmul
def test_skipped_cdist():
    pass


def test_zz_interrupted_after_leaking():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(Late)
    pytest.exit("stopping the session mid-test")


def test_zzz_never_runs():
    pass
"""


def test_header_and_summary_after_torch_tensorrt_is_imported(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(IMPORTING_CONFTEST)
    pytester.makepyfile(plugin_recipe=RECIPE.read_text(), test_report=REPORT_SUITE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rs", "--trt-target-sm", "7.5", "--trtcap-neutralize", "aten.mm.default", "-v",
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(passed=3, skipped=2)
    result.stdout.fnmatch_lines([
        "trtcap: targets: 7.5 (from --trt-target-sm); backend: rtx (detected); targets Turing on TensorRT-RTX: yes; "
        "guards: installed (* targets; on, default)",
        f"trtcap: torch-tensorrt {INSTALLED} (no upstream Turing guards)",
        "trtcap: neutralized: aten.mm.default (from --trtcap-neutralize)",
        "trtcap: gpu-less import: applied (device queries answered with 7.5); isolation: warn (default)",
    ])
    result.stdout.fnmatch_lines(["*_pytest.outcomes.Exit: stopping the session mid-test*"])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "capability skips: 2 (trt_cdist_matmul: 1, trt_fp32_gemm: 1)",
        "leaks: 1 test left global state changed (restored)",
        "  test_report.py::test_zz_interrupted_after_leaking -> "
        "added ATOMIC_SUBGRAPHS entry (Late, (), True) (interrupted)",
        "neutralized guards: aten.mm.default",
        "guards fired: fp32_gemm on aten.linear.default x2",
        "gpu-less import: applied (device queries answered with 7.5)",
    ])
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] test_report.py:*: trtcap: TensorRT-RTX cannot serve the cdist matrix multiply on SM 7.5 "
        "(targets 7.5 from --trt-target-sm)",
    ])
    assert "mm.default x" not in result.stdout.str()  # the neutralized guard never fired


PROPERTIES_OF_ITS_OWN = """
import pytest


def test_records_odd_properties(request, record_property):
    request.node.user_properties.append(("three", "fields", "here"))
    request.node.user_properties.append("loose")
    record_property("trtcap_leak", "forged leak")
    record_property("trtcap_fixture_leak", "test_nobody.py::test_x -> forged fixture leak")


@pytest.fixture
def recorded_then_skipped(record_property):
    record_property("trtcap_skip", "trt_bf16")
    pytest.skip("for a reason of its own")


def test_skipped_for_a_reason_of_its_own(recorded_then_skipped):
    pass
"""


@pytest.mark.parametrize("audit", [(), ("--trtcap-audit",)])
def test_a_test_s_own_properties_neither_break_nor_feed_the_summary(pytester: pytest.Pytester, audit: tuple) -> None:
    """``user_properties`` is the project's list too: an entry of any shape, or one under our keys, is not ours."""
    pytester.makepyfile(test_props=PROPERTIES_OF_ITS_OWN)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "7.5", *audit)
    output = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in output, output
    result.assert_outcomes(passed=1, skipped=1)
    assert "forged" not in output and "capability skips" not in output and "leaks:" not in output, output


FORGING_ORIGINS = """
import trtcap_guards as guards

guards.declare_targets("7.5", origin="conftest\\n===== 99 passed in 0.01s =====\\x1b[2J")
guards.declare_backend("rtx", origin="ci\\ntrtcap: forged")
"""


def test_a_declared_origin_cannot_forge_or_recolour_header_lines(pytester: pytest.Pytester) -> None:
    """The origin a project passes to ``declare_targets`` / ``declare_backend`` is its text: shown on our lines,
    it is escaped, never a line of its own or a terminal escape."""
    pytester.makeconftest(FORGING_ORIGINS)
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider")
    output = result.stdout.str()
    result.assert_outcomes(passed=1)
    assert "\x1b" not in output
    assert not [line for line in output.splitlines() if line.startswith(("===== 99", "trtcap: forged"))], output
    result.stdout.fnmatch_lines([
        r"trtcap: targets: 7.5 (from conftest\n===== 99 passed in 0.01s =====\x1b[[]2J); "
        r"backend: rtx (from ci\ntrtcap: forged);*",
        r"trtcap: builder targets: 7.5 (declared, from conftest\n===== 99 passed in 0.01s =====\x1b[[]2J)*",
    ])


JUNIT_SUITE = """
import pytest

STORE = []


@pytest.mark.trt_fp32_gemm
def test_skipped_by_a_marker():
    pass


def test_leaks():
    STORE.append(1)


def test_after():
    assert STORE == []
"""

JUNIT_CONFTEST = """
def pytest_trtcap_isolated_state(config):
    from test_junit import STORE
    return [("store", lambda: list(STORE), lambda saved: STORE.__setitem__(slice(None), saved))]
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")])
def test_the_plugin_writes_nothing_into_the_project_s_junit_xml(pytester: pytest.Pytester, xdist: tuple) -> None:
    """Skips, leaks and audit counts travel to the summary without becoming ``<properties>`` of the project's
    JUnit XML (pytest's default family, xunit2, has no place for them), under xdist too."""
    pytester.makepyfile(test_junit=JUNIT_SUITE)
    pytester.makeconftest(JUNIT_CONFTEST)
    xml = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--trt-target-sm", "7.5", "--trtcap-audit", f"--junitxml={xml}", *xdist)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines([
        "capability skips: 1 (trt_fp32_gemm: 1)",
        "leaks: 1 test left global state changed (restored)",
        "  test_junit.py::test_leaks -> store changed",
    ])
    text = xml.read_text()
    assert "<testcase" in text and "<properties" not in text and "trtcap" not in text.replace(
        "trtcap: TensorRT-RTX cannot serve", ""), text


def test_every_verbose_header_line_shows_declared_origins_on_it(pytester: pytest.Pytester) -> None:
    """The backend's and the builder switch's origins are the suite's text too (``-v`` shows them all)."""
    pytester.makeconftest(
        "import trtcap_guards as g\n"
        'g.declare_targets("7.5", origin="T\\n\\x1b[2Jforged")\n'
        'g.declare_backend("rtx", origin="B\\n\\x1b[2Jforged")\n'
        'g.enable_builder_targets(True, origin="S\\n\\x1b[2Jforged")\n'
    )
    pytester.makepyfile("def test_ok():\n    pass\n")
    held = guards.state_snapshot()
    try:
        result = pytester.runpytest("-v", "-p", "no:randomly")
    finally:
        guards.restore_state(held)
    assert "\x1b" not in result.stdout.str()
    assert [line for line in result.stdout.lines if line.startswith("[2J")] == []
    header = "\n".join(line for line in result.stdout.lines if line.startswith("trtcap: "))
    for origin in ("T", "B", "S"):
        assert f"{origin}\\n\\x1b[2Jforged" in header
