"""``TrtCapabilityMixin`` (``pytest_trtcap.unittest_support``): the one predicate's answers inside a plain
``unittest.TestCase``, run here by the standard library's own runner (no pytest fixtures reach it)."""

from __future__ import annotations

import io
import sys
import unittest

import pytest
import torch

from pytest_trtcap import TrtCapabilityMixin


class Seen(TrtCapabilityMixin, unittest.TestCase):
    """Records what the mixin answers; the test methods are run by ``run_case`` below, not collected."""

    __test__ = False
    answers: dict = {}

    def test_answers(self) -> None:
        Seen.answers = {
            "turing": self.trt_targets_turing,
            "dtype": self.turing_safe_gemm_dtype,
            "origin": self.trt_capability.origin,
            "counts": tuple(self.expected_partition_counts((1, 0), (1, 2))),
        }

    def test_dtype(self) -> None:
        self.turing_safe_gemm_dtype  # noqa: B018  (the property skips where torch is missing)


def run_case(name: str) -> unittest.TestResult:
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(Seen(name))
    assert not result.errors and not result.failures, result.errors + result.failures
    return result


@pytest.mark.parametrize("declared, turing, dtype, counts", [
    ("7.5", True, torch.float16, (1, 2)),
    ("8.9", False, torch.float32, (1, 0)),
    ("8.6,7.5", True, torch.float16, (1, 2)),
])
def test_the_mixin_answers_for_the_declared_targets(declared, turing, dtype, counts, targets):
    targets(declared, origin="unittest ci")
    run_case("test_answers")
    assert Seen.answers == {"turing": turing, "dtype": dtype, "origin": "unittest ci", "counts": counts}


def test_gemm_dtype_is_a_unittest_skip_naming_torch_where_torch_is_missing(monkeypatch, targets):
    targets("7.5")
    monkeypatch.setitem(sys.modules, "torch", None)  # ``import torch`` raises ImportError
    result = run_case("test_dtype")
    ((_, reason),) = result.skipped
    assert reason == "trtcap: turing_safe_gemm_dtype needs torch, which is not installed"


def test_bad_counts_fail_the_unittest_test(targets):
    targets("8.9")
    with pytest.raises(ValueError, match=r"^turing: expected \(acc, gpu\) non-negative integers, got \(1, -2\)$"):
        Seen("test_answers").expected_partition_counts((1, 0), (1, -2))


def test_the_mixin_takes_per_release_counts(targets):
    from importlib.metadata import version

    targets("7.5")
    releases = {f">={version('torch-tensorrt-rtx')}": {"turing": (2, 1)}}
    assert Seen("test_answers").expected_partition_counts((1, 0), (1, 2), releases=releases) == (2, 1)


class SeenAtClassSetUp(TrtCapabilityMixin, unittest.TestCase):
    """``setUpClass`` (class scope) reads the mixin through ``cls``: it must get the answers, not a property object
    (which is truthy, so ``if cls.trt_targets_turing:`` would take the Turing branch on every target)."""

    __test__ = False
    answers: dict = {}

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.answers = {
            "turing": cls.trt_targets_turing,
            "dtype": cls.turing_safe_gemm_dtype,
            "origin": cls.trt_capability.origin,
            "counts": tuple(cls.expected_partition_counts((1, 0), (1, 2))),
        }

    def test_nothing(self) -> None:
        pass


@pytest.mark.parametrize("declared, turing, dtype, counts", [
    ("7.5", True, torch.float16, (1, 2)),
    ("8.9", False, torch.float32, (1, 0)),
])
def test_the_mixin_answers_in_set_up_class_too(declared, turing, dtype, counts, targets):
    targets(declared, origin="unittest ci")
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(SeenAtClassSetUp))
    assert not result.errors and not result.failures, result.errors + result.failures
    assert SeenAtClassSetUp.answers == {"turing": turing, "dtype": dtype, "origin": "unittest ci", "counts": counts}
