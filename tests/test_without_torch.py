"""The plugin in an environment without torch: it loads, says so, and still decides from declared targets.

A throwaway virtual environment (session-scoped, built once) holds only this project (editable, no
dependencies) and pytest; the pytester suites below run with that environment's interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def no_pythonpath(no_trtcap_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch-less venv must not see this environment's packages."""
    monkeypatch.delenv("PYTHONPATH", raising=False)


def _pip(python: Path, *args: str) -> None:
    proc = subprocess.run([str(python), "-m", "pip", "install", "-q", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(
            f"cannot build the torch-less environment: pip install {' '.join(args)} failed:\n{proc.stderr[-2000:]}"
        )


@pytest.fixture(scope="session")
def notorch_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with this project (``--no-deps -e``) and pytest, and no torch."""
    venv = tmp_path_factory.mktemp("notorch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    env_pins = [
        f"pytest=={metadata.version('pytest')}", f"pluggy=={metadata.version('pluggy')}", "iniconfig", "packaging"
    ]
    _pip(python, "--no-deps", "-e", str(REPO_ROOT))
    _pip(python, *env_pins)  # with their dependencies (pytest needs pygments too)
    probe = subprocess.run(
        [str(python), "-c",
         "import importlib.util as u; "
         "print([m for m in ('torch', 'torch_tensorrt', 'tensorrt') if u.find_spec(m)])"],
        capture_output=True, text=True, check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert probe.stdout.strip() == "[]", f"the throwaway environment can import {probe.stdout.strip()}"
    return python


NOTORCH_SUITE = """
import unittest

import pytest


@pytest.mark.trt_fp32_gemm
def test_fp32_gemm():
    pass


def test_safe_dtype(turing_safe_gemm_dtype):
    pass


def test_decision_without_torch(trt_capability, trt_targets_turing, expected_partition_counts):
    counts = expected_partition_counts(default=(1, 0), turing=(1, 2))
    print("DECISION", trt_capability.targets, trt_capability.backend, trt_targets_turing, tuple(counts))


class TestUnittest(unittest.TestCase):
    def test_isolation_is_inert(self):
        pass
"""

MIXIN_SUITE = """
import unittest

from pytest_trtcap import TrtCapabilityMixin


class TestMixin(TrtCapabilityMixin, unittest.TestCase):
    def test_dtype(self):
        self.turing_safe_gemm_dtype

    def test_decision(self):
        assert self.trt_targets_turing
"""


def test_plugin_loads_and_decides_from_declared_targets_without_torch(
    pytester: pytest.Pytester, notorch_python: Path
) -> None:
    pytester.makepyfile(NOTORCH_SUITE)
    result = pytester.run(str(notorch_python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-s", "-v",
                          "--trt-target-sm", "7.5")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines([
        "trtcap: targets: 7.5 (from --trt-target-sm); backend: absent (detected); targets Turing on TensorRT-RTX: yes; "
        "guards: on (default; installed when torch_tensorrt is imported)",
        "trtcap: torch-tensorrt: not installed (isolation inert; markers decide from declared targets)",
        "plugins: trtcap-*",
    ])
    result.stdout.fnmatch_lines_random([
        "*DECISION ((7, 5),) absent True (1, 2)*",
        "SKIPPED [[]1[]] *:*: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 (targets 7.5 from --trt-target-sm)",
        "SKIPPED [[]1[]] *:*: trtcap: turing_safe_gemm_dtype needs torch, which is not installed",
        "capability skips: 1 (trt_fp32_gemm: 1)",
    ])


def test_without_torch_at_8_9_the_marker_runs_and_the_fixture_still_skips(
    pytester: pytest.Pytester, notorch_python: Path
) -> None:
    pytester.makepyfile(NOTORCH_SUITE)
    result = pytester.run(str(notorch_python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-s",
                          "--trt-target-sm", "8.9", "--strict-markers")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.fnmatch_lines_random([
        "*DECISION ((8, 9),) absent False (1, 0)*",
        "SKIPPED [[]1[]] *: trtcap: turing_safe_gemm_dtype needs torch, which is not installed",
    ])
    assert "capability skips" not in result.stdout.str()


def test_without_torch_markers_are_listed(pytester: pytest.Pytester, notorch_python: Path) -> None:
    result = pytester.run(str(notorch_python), "-m", "pytest", "--markers")
    assert result.ret == 0
    result.stdout.fnmatch_lines_random([
        "@pytest.mark.trt_fp32_gemm: *",
        "@pytest.mark.trt_cdist_matmul: *",
        "@pytest.mark.trt_conv3d: *",
        "@pytest.mark.trt_bf16: *",
        "@pytest.mark.trtcap_no_isolation: *",
    ])


def test_without_torch_the_mixin_skips_like_the_fixture(
    pytester: pytest.Pytester, notorch_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_mixin=MIXIN_SUITE)
    result = pytester.run(
        str(notorch_python), "-m", "pytest", "-p", "no:cacheprovider", "-rs", "--trt-target-sm", "7.5"
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1[]] *: trtcap: turing_safe_gemm_dtype needs torch, which is not installed"]
    )
    # and under the plain unittest runner, which knows nothing of pytest's skip exception
    monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5")
    plain = pytester.run(str(notorch_python), "-m", "unittest", "-v", "test_mixin")
    assert plain.ret == 0
    plain.stderr.fnmatch_lines(["*skipped 'trtcap: turing_safe_gemm_dtype needs torch, which is not installed'*"])
