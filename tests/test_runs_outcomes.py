"""The vocabulary every part of ``trtcap`` shares (``pytest_trtcap.runs.outcomes``): the outcomes, what fails, and
which skips are the plugin's "needs a GPU" skips."""

from __future__ import annotations

import pytest

from pytest_trtcap.runs import outcomes
from pytest_trtcap.runs.outcomes import needs_gpu, needs_gpu_count, outcome_counts

GPU_REASON = "trtcap: needs a GPU: test_x.py:12: RuntimeError: Found no NVIDIA driver (signature: cuda-init)"


def test_the_outcomes_are_pytests_and_only_failed_and_error_fail():
    assert outcomes.OUTCOMES == ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    assert {"failed", "error"} == outcomes.FAILING
    assert outcomes.WHENS == ("setup", "call", "teardown", "collect", "crash")


def test_the_prefix_is_the_one_the_plugin_writes():
    from pytest_trtcap.needs_gpu import REASON_PREFIX

    assert outcomes.NEEDS_GPU_PREFIX == REASON_PREFIX


@pytest.mark.parametrize("entry, expected", [
    ({"outcome": "skipped", "reason": GPU_REASON}, True),
    ({"outcome": "skipped", "reason": "trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)"}, False),
    ({"outcome": "failed", "reason": GPU_REASON}, False),  # only a skip the plugin made counts
    ({"outcome": "xfailed", "reason": GPU_REASON}, False),
    ({"outcome": "skipped", "reason": None}, False),
    ({"outcome": "skipped", "reason": ["trtcap: needs a GPU: "]}, False),
    ({"outcome": "skipped", "reason": " " + GPU_REASON}, False),  # the prefix starts the reason
    ({"outcome": "skipped"}, False),
    (None, False),
])
def test_needs_gpu(entry, expected):
    assert needs_gpu(entry) is expected


def test_counts_start_at_zero_for_every_outcome_and_keep_pytests_order():
    tests = {"a": {"outcome": "passed"}, "b": {"outcome": "failed"}, "c": {"outcome": "passed"},
             "d": {"outcome": "skipped", "reason": GPU_REASON}, "e": {"outcome": "skipped", "reason": "no"}}
    counts = outcome_counts(tests)
    assert counts == {"passed": 2, "failed": 1, "error": 0, "skipped": 2, "xfailed": 0, "xpassed": 0}
    assert list(counts) == list(outcomes.OUTCOMES)
    assert needs_gpu_count(tests) == 1
    assert outcome_counts({}) == dict.fromkeys(outcomes.OUTCOMES, 0) and needs_gpu_count({}) == 0
