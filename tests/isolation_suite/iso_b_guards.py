"""The guards' declarations are process-wide: a test that declares and leaves it must not steer later tests."""

import pytest

import trtcap_guards as guards


def test_declares_89_and_leaves_it():
    guards.declare_targets("8.9", origin="a leaky test")


def test_neutralizes_and_leaves_it():
    guards.neutralize("aten.mm.default").__enter__()


@pytest.mark.trt_fp32_gemm
def test_fp32_gemm_marker_still_skips_at_75():
    assert False, "ran: the leaked 8.9 declaration decided"


def test_guards_state_is_as_before():
    assert guards.neutralized() == ()
    assert guards.capability_decision().targets_text == "7.5"
