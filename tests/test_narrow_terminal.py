"""The plugin's own text is whole at any terminal width.

pytest cuts its short summary's messages at the terminal's width; the ``trtcap`` header lines, the ``trtcap``
summary section and the leak warning are ours and must reach a narrow terminal unabridged, since people and tools
read them. pytest reads a ``COLUMNS`` under 40 as 80, so 40 is the narrowest width it honours.
"""

from __future__ import annotations

import re

import pytest

CONFTEST = """
import narrow_state


def pytest_trtcap_isolated_state(config):
    def snapshot():
        return list(narrow_state.CACHE)

    def restore(saved):
        narrow_state.CACHE[:] = saved

    return [("a user cache whose label alone is wider than a narrow terminal", snapshot, restore)]
"""

LEAKING = """
import pytest

import narrow_state


def test_a_test_whose_node_id_is_wider_than_any_narrow_terminal_and_leaks():
    narrow_state.CACHE.append("left behind")


@pytest.mark.trt_fp32_gemm
def test_needs_fp32_gemm():
    pass
"""

NODE = "test_narrow.py::test_a_test_whose_node_id_is_wider_than_any_narrow_terminal_and_leaks"
WHAT = "a user cache whose label alone is wider than a narrow terminal changed"


@pytest.mark.parametrize("columns, width", [("20", 80), ("40", 40)])
def test_a_leak_line_and_the_summary_are_whole_on_a_narrow_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, columns: str, width: int
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(narrow_state="CACHE = []\n", test_narrow=LEAKING)
    monkeypatch.setenv("COLUMNS", columns)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-v",
                                           "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=1, skipped=1, warnings=1)
    lines = result.outlines
    assert len(lines[0]) <= width, lines[0]  # pytest drew its rules at the narrow width
    assert ("trtcap: targets: 7.5 (from --trt-target-sm); backend: rtx (detected); targets Turing on TensorRT-RTX: "
            "yes; guards: on (default; installed when torch_tensorrt is imported)") in lines
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"-+ trtcap -+", line))
    assert lines[start + 1:start + 4] == [
        "capability skips: 1 (trt_fp32_gemm: 1)",
        "leaks: 1 test left global state changed (restored)",
        f"  {NODE} -> {WHAT}",
    ]
    result.stdout.fnmatch_lines([f"*TrtcapLeakWarning: {NODE} leaked global state: {WHAT}"])
