"""Failure signatures: what varies between runs of the same failure is normalised away."""

from __future__ import annotations

import pytest

from pytest_trtcap.runs import signatures

hypothesis = pytest.importorskip("hypothesis")
# E402 is wrong here: these imports must follow importorskip so a missing hypothesis skips the module.
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.parametrize(
    "text, expected",
    [
        ("object at 0x7f3a2c1d90 failed", "object at <addr> failed"),
        ("id 140234 and pid 88", "id <N> and pid <N>"),
        ("bad shape 3x4x5", "bad shape <N>x<N>x<N>"),
        ("took 0.12s, expected 12.", "took <N>s, expected <N>."),
        ("float32 sm_75 x86_64 SM75", "float32 sm_75 x86_64 SM75"),
        ("SM 7.5 and 8.9", "SM <N> and <N>"),
        ("worker 'gw3' died", "worker 'gw<N>' died"),
        ("/tmp/pytest-of-ci/pytest-42/test_tmp0/data/x.bin", "<tmp>/data/x.bin"),
        ("/tmp/pytest-of-ci/pytest-42/popen-gw1/test_tmp0/x", "<tmp>/x"),
        ("open '/tmp/tmpa1b2c3/model.onnx'", "open '<tmp>/model.onnx'"),
        ("run 123e4567-e89b-12d3-a456-426614174000 hash deadbeef1234abcd", "run <uuid> hash <hex>"),
    ],
)
def test_normalise(text, expected):
    assert signatures.normalise(text) == expected


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_normalise_is_idempotent(text):
    once = signatures.normalise(text)
    assert signatures.normalise(once) == once


@pytest.mark.parametrize(
    "message, expected",
    [
        ("ZeroDivisionError: division by zero", "ZeroDivisionError: division by zero"),
        ("assert 2 == 1\n +  where 2 = f()", "AssertionError: assert <N> == <N>"),
        ("AssertionError: object at 0xdeadbeef", "AssertionError: object at <addr>"),
        ("mymod.ShapeError: got 3x4", "mymod.ShapeError: got <N>x<N>"),
        ("Skipped: trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)",
         "Skipped: trtcap: needs SM <N> (targets <N> from --trt-target-sm)"),
        ("[XPASS(strict)] flaky kernel", "XPASS(strict): flaky kernel"),
        ("StopIteration", "StopIteration"),
        ("", None),
        (None, None),
    ],
)
def test_signature_from_message(message, expected):
    assert signatures.signature_from_message(message) == expected


def test_signature_is_capped():
    sig = signatures.signature_from_message("ValueError: " + "x" * 5000)
    assert len(sig) <= 300 and sig.endswith("...")
