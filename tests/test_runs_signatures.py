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


# A set and a dict built from one: their reprs follow string hashing, which each Python process seeds anew.
HASH_ORDERED = (
    "ops = {'aten.linear.default', 'aten.addmm.default', 'aten.mm.default', 'aten.bmm.default', 'aten.conv2d'}\n"
    "print(repr(ops), repr(dict.fromkeys(ops, {'fp32', 'fp16', 'bf16'})), repr(frozenset(ops)))\n"
)


def _repr_in_a_process(seed):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", HASH_ORDERED], capture_output=True, text=True, timeout=60,
                          env={"PYTHONHASHSEED": str(seed)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_failure_naming_a_set_has_one_signature_whatever_the_processs_hash_order():
    """Torch-TensorRT's ``<OpOverload ...> unexpectedly found in {...}``: a set's repr follows the hash seed of the
    process that raised it, so the same failure in two arms (two processes) was listed as "signature differs"."""
    first = _repr_in_a_process(1)
    other = next((text for text in map(_repr_in_a_process, range(2, 40)) if text != first), None)
    assert other is not None, "no two hash seeds gave different orders"
    prefix = "RuntimeError: <OpOverload(op='aten.linear', overload='default')> unexpectedly found in "
    signature = signatures.signature_from_message(prefix + first)
    assert signature == signatures.signature_from_message(prefix + other)
    assert "'aten.addmm.default'" in signature and "'bf16'" in signature  # the elements are still there


@pytest.mark.parametrize(
    "one, other",
    [
        ("{'a, b', 'c}'}", "{'c}', 'a, b'}"),
        ("{\"it's\", 'x'}", "{'x', \"it's\"}"),
        ("{'k': [1, {'y', 'x'}], 'j': (2, 3)}", "{'j': (2, 3), 'k': [1, {'x', 'y'}]}"),
        ("found in frozenset({b, a}) and {d, c}", "found in frozenset({a, b}) and {c, d}"),
    ],
)
def test_a_brace_group_in_a_message_is_compared_without_its_order(one, other):
    assert signatures.normalise(one) == signatures.normalise(other)


@pytest.mark.parametrize(
    "text",
    ["{'a', 'b'} can't {c, d}", "{'a', (b, c}", "unclosed {b, a", "} {b, a} {"],
)
def test_text_around_brace_groups_is_kept(text):
    """Apostrophes, unbalanced brackets and stray braces never swallow or drop text."""
    out = signatures.normalise(text)
    assert sorted(out.replace(" ", "")) == sorted(text.replace(" ", ""))


@given(st.lists(st.text(max_size=12), max_size=8), st.randoms(use_true_random=False))
def test_a_set_of_any_strings_normalises_the_same_in_any_order(items, rnd):
    shuffled = list(items)
    rnd.shuffle(shuffled)
    as_written = "KeyError: {" + ", ".join(map(repr, items)) + "} and {" + ", ".join(map(repr, shuffled)) + "}"
    reordered = "KeyError: {" + ", ".join(map(repr, shuffled)) + "} and {" + ", ".join(map(repr, items)) + "}"
    assert signatures.normalise(as_written) == signatures.normalise(reordered)


@pytest.mark.parametrize("unit", ["{'\\", "{([", "{a, "], ids=["escaped-quotes", "openers", "elements"])
def test_a_message_of_megabytes_of_brackets_and_quotes_gets_its_signature_in_linear_time(unit):
    """Messages can be tens of megabytes: quadratic work on one of a megabyte would take hours, not seconds."""
    import time

    started = time.monotonic()
    sig = signatures.signature_from_message("ValueError: " + unit * (1_000_000 // len(unit)))
    assert time.monotonic() - started < 30 and sig.startswith("ValueError: {")
