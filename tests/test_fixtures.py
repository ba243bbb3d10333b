"""The plugin's fixtures, and the partition helpers used with them in a suite, on a real partitioned Torch-TensorRT
module.

``torch_tensorrt`` is imported (and the recipe's export warmed) by a module-scoped fixture *before* any
pytester fixture takes its ``sys.modules`` snapshot: inline runs then import nothing new, so pytester's
snapshot restore cannot drop half of torch from ``sys.modules``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import pytest_trtcap
import trtcap_guards as guards
from pytest_trtcap import assert_partition_counts, count_partitions

RECIPE = Path(__file__).with_name("plugin_recipe.py")



@pytest.fixture(scope="module", autouse=True)
def recipe() -> Any:
    """torch_tensorrt imported and the FP32 and FP16 exports cached, in this process, before pytester runs."""
    if str(RECIPE.parent) not in sys.path:  # importable whatever the import mode
        sys.path.insert(0, str(RECIPE.parent))
    import plugin_recipe

    guards.import_torch_tensorrt()
    import torch

    plugin_recipe.lowered(torch.float32)
    plugin_recipe.lowered(torch.float16)
    plugin_recipe.partition()  # the partitioner's own lazy imports, done here once
    return plugin_recipe


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(plugin_recipe=RECIPE.read_text())
    pytester.syspathinsert()
    return pytester


# --- fixtures, as a test suite sees them ------------------------------------------------------------------

FIXTURE_SUITE = """
import unittest

import pytest

from pytest_trtcap import PartitionCounts, TrtCapabilityMixin


def test_dtype(turing_safe_gemm_dtype):
    print("DTYPE", turing_safe_gemm_dtype)


def test_turing(trt_targets_turing):
    print("TURING", trt_targets_turing)


def test_capability(trt_capability):
    c = trt_capability
    print("CAPABILITY", c.targets, c.source, c.origin, c.backend, "|", c.reason)


def test_counts(expected_partition_counts):
    chosen = expected_partition_counts(default=(1, 0), turing=(1, 2))
    assert isinstance(chosen, PartitionCounts)
    try:
        alone = tuple(expected_partition_counts(default=(3, 1)))
    except ValueError as exc:  # Turing is a target: its counts must be given
        alone = str(exc).split(" (", 1)[0]
    print("COUNTS", tuple(chosen), alone)


def test_bad_counts_fail_on_every_target(expected_partition_counts):
    with pytest.raises(ValueError, match=r"turing: expected \\(acc, gpu\\) non-negative integers, got \\(1, -1\\)"):
        expected_partition_counts(default=(1, 0), turing=(1, -1))
    with pytest.raises(ValueError, match=r"default: .* got \\[1, 0\\]"):
        expected_partition_counts(default=[1, 0])


class TestMixin(TrtCapabilityMixin, unittest.TestCase):
    def test_mixin(self):
        print("MIXIN", self.turing_safe_gemm_dtype, self.trt_targets_turing,
              tuple(self.expected_partition_counts((1, 0), (1, 2))), self.trt_capability.origin)
"""


@pytest.mark.parametrize(
    "args, env, expected",
    [
        (["--trt-target-sm", "7.5"], None, [
            "DTYPE torch.float16",
            "TURING True",
            "CAPABILITY ((7, 5),) declared --trt-target-sm rtx | "
            "TensorRT-RTX targets SM 7.5 (targets 7.5 from --trt-target-sm)",
            "COUNTS (1, 2) expected_partition_counts: no turing= counts, and the targets include Turing",
            "MIXIN torch.float16 True (1, 2) --trt-target-sm",
        ]),
        (["--trt-target-sm", "8.9"], None, [
            "DTYPE torch.float32",
            "TURING False",
            "CAPABILITY ((8, 9),) declared --trt-target-sm rtx | "
            "SM 7.5 is not among the targets (targets 8.9 from --trt-target-sm)",
            "COUNTS (1, 0) (3, 1)",
            "MIXIN torch.float32 False (1, 0) --trt-target-sm",
        ]),
        ([], "7.5", [
            "DTYPE torch.float16",
            "CAPABILITY ((7, 5),) TRTCAP_TARGET_SM TRTCAP_TARGET_SM rtx | "
            "TensorRT-RTX targets SM 7.5 (targets 7.5 from TRTCAP_TARGET_SM)",
            "MIXIN torch.float16 True (1, 2) TRTCAP_TARGET_SM",
        ]),
        (["--trt-target-sm", "7.5", "--trt-backend", "standard"], None, [
            "DTYPE torch.float32",
            "TURING False",
            "CAPABILITY ((7, 5),) declared --trt-target-sm standard | backend is standard TensorRT "
            "(--trt-backend); Turing limits of TensorRT-RTX do not apply (targets 7.5 from --trt-target-sm)",
            "COUNTS (1, 0) (3, 1)",
        ]),
    ],
    ids=["cli-7.5", "cli-8.9", "env-7.5", "standard-7.5"],
)
def test_fixtures_follow_the_declared_targets(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args, env, expected
) -> None:
    pytester.makepyfile(FIXTURE_SUITE)
    if env is not None:
        monkeypatch.setenv("TRTCAP_TARGET_SM", env)
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines_random(["*" + line + "*" for line in expected])


def test_fixtures_are_listed_with_their_docs(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--fixtures")
    result.stdout.fnmatch_lines_random([
        "turing_safe_gemm_dtype*",
        "*torch.float16`` where FP32 GEMMs cannot be served on the targets, else ``torch.float32``*",
        "trt_targets_turing*",
        "trt_capability*",
        "expected_partition_counts*",
    ])


def test_public_helpers_are_exported() -> None:
    assert pytest_trtcap.count_partitions is count_partitions
    assert pytest_trtcap.assert_partition_counts is assert_partition_counts
    assert set(pytest_trtcap.__all__) >= {"count_partitions", "assert_partition_counts", "PartitionCounts",
                                          "expected_partition_counts", "TrtCapabilityMixin"}


# --- the whole flow inside a suite: the plugin installs the guards, the fixture sets the expectation --------

PARTITION_SUITE = """
import torch
import trtcap_guards as guards

import plugin_recipe
from pytest_trtcap import assert_partition_counts, count_partitions


def test_expected_counts_match_the_real_partition(expected_partition_counts):
    pm, model, x = plugin_recipe.partition()
    assert_partition_counts(pm, expected_partition_counts(default=(1, 0), turing=(1, 2)))
    assert torch.allclose(pm(x), model(x))


def test_the_safe_dtype_keeps_one_tensorrt_block(turing_safe_gemm_dtype):
    pm, model, x = plugin_recipe.partition(turing_safe_gemm_dtype)
    assert count_partitions(pm) == (1, 0)


def test_a_wrong_expectation_shows_the_blocks():
    pm, _, _ = plugin_recipe.partition()
    print("GUARDS INSTALLED", guards.is_installed())
    assert_partition_counts(pm, (1, 0))
"""


def test_partition_expectations_in_a_suite_at_7_5(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_partition=PARTITION_SUITE)
    result = suite.runpytest("--trt-target-sm", "7.5")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*AssertionError: partition counts (1, 2) != expected (1, 0) (acc, gpu)",
        "E*blocks:",
        "E*  _run_on_gpu_0: aten.linear.default",
        "E*  _run_on_acc_1: aten.relu.default",
        "E*  _run_on_gpu_2: aten.linear.default",
        "E*trtcap: targets Turing on TensorRT-RTX = True: "
        "TensorRT-RTX targets SM 7.5 (targets 7.5 from --trt-target-sm)",
    ])
    result.stdout.fnmatch_lines(["GUARDS INSTALLED True"])
    result.stdout.fnmatch_lines(["*guards fired: *fp32_gemm on aten.linear.default x*"])


def test_partition_expectations_in_a_suite_at_8_9(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_partition=PARTITION_SUITE)
    result = suite.runpytest("--trt-target-sm", "8.9")
    result.assert_outcomes(passed=3)


def test_with_guards_off_nothing_is_kept_off_tensorrt(suite: pytest.Pytester) -> None:
    """The three blocks at 7.5 come from the plugin's guards: switched off, FP32 linear stays on TensorRT."""
    suite.makepyfile(test_partition=PARTITION_SUITE)
    result = suite.runpytest("--trt-target-sm", "7.5", "--trtcap-guards", "off", "-s")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*GUARDS INSTALLED False*",
        "*AssertionError: partition counts (1, 0) != expected (1, 2) (acc, gpu)",
    ])
    assert not guards.is_installed()


WIDE_SCOPE = """
import pytest
import trtcap_guards

@pytest.fixture(scope="module")
def asks_the_fixture(trt_capability):
    return trt_capability

@pytest.fixture(scope="module")
def asks_the_guards():
    return trtcap_guards.capability_decision()

def test_through_the_fixture(asks_the_fixture):
    pass

def test_through_the_guards(asks_the_guards):
    assert asks_the_guards.targets == ((8, 9),) and asks_the_guards.origin == "--trt-target-sm"
"""


def test_a_wider_fixture_asks_the_guards_not_the_function_scoped_fixtures(pytester: pytest.Pytester) -> None:
    """What the README says of the fixtures' scope: requesting them from a module fixture is pytest's
    ScopeMismatch, and calling the predicate there gives the session's decision."""
    pytester.makepyfile(test_wide=WIDE_SCOPE)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--trt-target-sm", "8.9")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*ScopeMismatch*trt_capability*"])
