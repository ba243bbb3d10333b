"""The registry review: every converter target of the installed Torch-TensorRT is judged against the rules, and a
target the review does not cover is a named list (API, report header, summary), never a silent hole."""

from __future__ import annotations

import operator

import pytest
import torch

import trtcap_guards as guards
from trtcap_guards import review

NEW_TARGET = "aten.logsumexp.default"  # no converter in Torch-TensorRT 2.14


def register_new_converter() -> None:
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter

    dynamo_tensorrt_converter(torch.ops.aten.logsumexp.default)(lambda ctx, target, args, kwargs, name: args[0])


def test_the_new_target_is_not_in_the_review_nor_the_registry(aten_converters):
    """Guards the premise of the drift tests below."""
    assert NEW_TARGET not in review.REVIEW
    assert NEW_TARGET not in {review.review_name(t) for t in aten_converters}


@pytest.mark.trtcap_no_isolation  # registry_guard restores the registry
def test_registering_a_new_target_lists_exactly_that_target(registry_guard):
    register_new_converter()
    assert guards.unreviewed_targets() == (NEW_TARGET,)


@pytest.mark.trtcap_no_isolation  # registry_guard restores the registry
def test_a_second_converter_for_a_reviewed_target_is_no_drift(registry_guard):
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter

    dynamo_tensorrt_converter(torch.ops.aten.mm.default)(lambda ctx, target, args, kwargs, name: args[0])
    assert guards.unreviewed_targets() == ()


@pytest.mark.parametrize("bad, problem", [
    ({"aten.mm.default": review.NONE},
     "aten.mm.default: reviewed as carrying none, but rule fp32_gemm, fp32_acc_gemm names it"),
    ({"aten.abs.default": "fp32_gemm"}, "aten.abs.default: reviewed as guarded by fp32_gemm, which does not name it"),
    ({"aten.abs.default": "looks fine"}, "aten.abs.default: verdict 'looks fine' is neither a rule name nor"),
])
def test_review_problems_name_each_disagreement(bad, problem):
    (found,) = review.review_problems(bad)
    assert found.startswith(problem)


def test_review_names_are_stable_for_python_function_targets(aten_converters):
    assert review.review_name(operator.add) == "_operator.add"
    assert review.review_name(torch.sym_min) == "torch.sym_min"
    assert review.review_name(torch.ops.aten.mm.default) == "aten.mm.default"
    assert not [n for n in map(review.review_name, aten_converters) if " at 0x" in n]


def test_review_name_never_raises():
    class Hostile:
        def __str__(self) -> str:
            raise RuntimeError("no")

        def __getattr__(self, name: str) -> None:
            raise RuntimeError("no")

    assert isinstance(review.review_name(Hostile()), str)


# --- what a user sees ----------------------------------------------------------------------------------------

DRIFT_CONFTEST = '''
import torch
import trtcap_guards
trtcap_guards.import_torch_tensorrt()
from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter
dynamo_tensorrt_converter(torch.ops.aten.logsumexp.default)(lambda ctx, target, args, kwargs, name: args[0])
'''


@pytest.mark.trtcap_no_isolation  # registry_guard restores the registry
def test_header_and_summary_say_how_many_targets_are_unreviewed(pytester, tt, registry_guard):
    pytester.makeconftest(DRIFT_CONFTEST)
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    line = ("*registry review: 1 converter target(s) not reviewed against the rules "
            "(reviewed: Torch-TensorRT 2.14.0): aten.logsumexp.default")
    result.stdout.fnmatch_lines(["trtcap: " + line[1:], "*- trtcap -*", line])


def test_no_review_line_when_everything_is_reviewed(pytester, tt):
    pytester.makepyfile(test_x="import torch_tensorrt\n\ndef test_x():\n    pass\n")
    result = pytester.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=1)
    assert "registry review" not in result.stdout.str()


INSIDE_A_TEST = '''
import torch
import trtcap_guards
from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter

def test_registers():
    dynamo_tensorrt_converter(torch.ops.aten.logsumexp.default)(lambda ctx, target, args, kwargs, name: args[0])
    assert trtcap_guards.unreviewed_targets() == ("aten.logsumexp.default",)

def test_after():
    assert trtcap_guards.unreviewed_targets() == ()
'''


def test_a_target_registered_inside_a_test_is_listed_then_removed_by_isolation(pytester, tt):
    pytester.makepyfile(test_drift=INSIDE_A_TEST)
    result = pytester.runpytest("-p", "no:randomly", "-W", "ignore::DeprecationWarning")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*leaks: 1 test *", "*test_drift.py::test_registers -> *logsumexp*"])
