"""``assert_trt_close`` on CPU tensors: all-zero, NaN, Inf, mismatch and match each give their own outcome, for
single tensors and nested structures, with the capability decision and the rules at the declared targets."""

from __future__ import annotations

import pytest
import torch

import trtcap_guards as guards
from pytest_trtcap import assert_trt_close

EAGER = torch.arange(1.0, 13.0).reshape(3, 4)


def failure(actual, expected, **kw) -> str:
    with pytest.raises(AssertionError) as info:
        assert_trt_close(actual, expected, **kw)
    return str(info.value)


def test_match_passes_like_assert_close():
    assert_trt_close(EAGER.clone(), EAGER)
    assert_trt_close({"a": [EAGER, EAGER + 1]}, {"a": [EAGER, EAGER + 1]})
    assert_trt_close(torch.zeros(3), torch.zeros(3))  # zeros where eager is zero too
    assert_trt_close(torch.tensor([0.0, 1.0]), torch.tensor([0.0, 1.0]))  # first element zero, not all zeros
    assert_trt_close(torch.empty(0), torch.empty(0))


def test_all_zero_output_is_reported_as_such_with_the_decision_and_rules(targets):
    targets("7.5")
    message = failure(torch.zeros(3, 4), EAGER)
    lines = message.splitlines()
    assert lines[0] == "trtcap: all-zero output where eager is non-zero"
    assert lines[1] == "  output (shape (3, 4), torch.float32) is all zeros; eager has 12 non-zero element(s)"
    assert lines[2] == "trtcap: targets Turing on TensorRT-RTX = True: " + guards.capability_decision().reason
    assert lines[3] == "trtcap: rules that apply at the declared targets:"
    assert [line.split(":")[0].strip() for line in lines[4:4 + len(guards.RULES)]] == [r.name for r in guards.RULES]
    assert "Mismatched elements" not in message  # reported before (instead of) the numeric comparison


def test_all_zero_output_fails_even_where_loose_tolerances_would_pass(targets):
    targets("8.9")
    small = EAGER * 1e-7
    torch.testing.assert_close(torch.zeros(3, 4), small)  # the plain comparison passes: the silent case
    message = failure(torch.zeros(3, 4), small)
    assert message.startswith("trtcap: all-zero output where eager is non-zero\n")
    assert "rules that apply at the declared targets: none" in message


def test_all_zero_output_inside_a_nested_structure_is_named_by_its_path(targets):
    targets("7.5")
    actual = {"logits": [EAGER, torch.zeros(2)], "aux": (EAGER,)}
    expected = {"logits": [EAGER, torch.ones(2)], "aux": (EAGER,)}
    lines = failure(actual, expected).splitlines()
    assert lines[:2] == ["trtcap: all-zero output where eager is non-zero",
                         "  output['logits'][1] (shape (2,), torch.float32) is all zeros; "
                         "eager has 2 non-zero element(s)"]


def test_non_contiguous_all_zero_output():
    actual = torch.zeros(4, 3).t()
    assert not actual.is_contiguous()
    assert failure(actual, EAGER).startswith("trtcap: all-zero output")


def test_nan_output_is_reported_as_such():
    actual = EAGER.clone()
    actual[1, 2] = float("nan")
    lines = failure(actual, EAGER).splitlines()
    assert lines[:2] == ["trtcap: NaN output where eager is not NaN",
                         "  output (shape (3, 4), torch.float32) has 1 NaN element(s) where eager is not NaN"]


def test_inf_output_is_reported_as_such():
    actual = EAGER.clone()
    actual[0, 0] = float("inf")
    lines = failure(actual, EAGER).splitlines()
    assert lines[:2] == ["trtcap: Inf output where eager is not the same Inf",
                         "  output (shape (3, 4), torch.float32) has 1 Inf element(s) where eager is not the same Inf"]


def test_nan_where_eager_has_nan_too_follows_equal_nan():
    both = torch.tensor([1.0, float("nan")])
    assert_trt_close(both.clone(), both, equal_nan=True)
    message = failure(both.clone(), both)  # torch's default: NaN != NaN
    assert message.startswith("trtcap: output mismatch (no all-zero, NaN or Inf output)\n")


def test_numeric_mismatch_keeps_torchs_message(targets):
    targets("7.5")
    lines = failure(EAGER + 1, EAGER).splitlines()
    assert lines[0] == "trtcap: output mismatch (no all-zero, NaN or Inf output)"
    assert lines[1] == "Tensor-likes are not close!"
    assert "Mismatched elements: 12 / 12 (100.0%)" in lines
    assert lines[-1].startswith("trtcap: targets Turing on TensorRT-RTX = True")


def test_tolerances_and_options_are_torchs():
    assert_trt_close(EAGER + 0.05, EAGER, rtol=0, atol=0.1)
    assert failure(EAGER + 0.05, EAGER, rtol=0, atol=0.01).startswith("trtcap: output mismatch")
    assert failure(EAGER.double(), EAGER).startswith("trtcap: output does not match eager in structure")  # dtype
    assert_trt_close(EAGER.double(), EAGER, check_dtype=False)


def test_integer_and_bool_outputs():
    assert_trt_close(torch.tensor([0, 3]), torch.tensor([0, 3]))
    assert failure(torch.tensor([0, 0]), torch.tensor([0, 3])).startswith("trtcap: all-zero output")
    assert failure(torch.tensor([False]), torch.tensor([True])).startswith("trtcap: all-zero output")


def torch_failure(actual, expected, **kw) -> str:
    with pytest.raises(AssertionError) as info:
        torch.testing.assert_close(actual, expected, **kw)
    return str(info.value)


def nested(leaf, depth: int):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


@pytest.mark.parametrize("actual, expected", [
    ([EAGER], [EAGER, EAGER]),
    (torch.zeros(3), torch.ones(4)),
    (torch.zeros(3), torch.ones(3, dtype=torch.float64)),
    ([torch.zeros(3)], [torch.ones(3), torch.ones(3)]),
    ({"a": torch.zeros(3)}, {"b": torch.ones(3)}),
    ({"a": [torch.zeros(2)]}, {"a": [torch.ones(2, 1)]}),
], ids=["length", "shape", "dtype", "length of zeros", "keys", "nested shape"])
def test_a_structure_mismatch_is_reported_as_torch_reports_it_not_as_an_all_zero_output(actual, expected):
    """Zeros of another shape, dtype or count than eager's say nothing about TensorRT: the test compares the wrong
    things, and torch's report (shape, dtype, length, keys) is the one that says so."""
    message = failure(actual, expected)
    assert message.splitlines()[0] == "trtcap: output does not match eager in structure (torch's report follows)"
    assert torch_failure(actual, expected) in message
    assert "all-zero" not in message


def test_the_zero_check_reads_the_outputs_that_match_in_structure_beside_one_that_does_not():
    actual = [torch.zeros(3), torch.zeros(2)]
    expected = [torch.ones(3), torch.ones(4)]
    lines = failure(actual, expected).splitlines()
    assert lines[:2] == ["trtcap: all-zero output where eager is non-zero",
                         "  output[0] (shape (3,), torch.float32) is all zeros; eager has 3 non-zero element(s)"]
    report = lines.index("trtcap: output does not match eager in structure (torch's report follows)")
    assert "\n".join(lines[report + 1:]).startswith(torch_failure(actual, expected))


@pytest.mark.parametrize("depth", [33, 40, 200])
def test_an_all_zero_output_nested_at_any_depth_is_found(depth):
    small = torch.full((3,), 1e-7)
    torch.testing.assert_close(nested(torch.zeros(3), depth), nested(small, depth))  # the silent case
    message = failure(nested(torch.zeros(3), depth), nested(small, depth))
    assert message.splitlines()[:2] == [
        "trtcap: all-zero output where eager is non-zero",
        f"  output{'[0]' * depth} (shape (3,), torch.float32) is all zeros; eager has 3 non-zero element(s)"]


@pytest.mark.parametrize("depth", [33, 200])
def test_a_nan_output_nested_at_any_depth_is_named(depth):
    nan = torch.tensor([1.0, float("nan")])
    assert failure(nested(nan, depth), nested(torch.ones(2), depth)).startswith("trtcap: NaN output")


@pytest.mark.parametrize("tolerance", ["0.1", [0.1], 1j, object(), float("nan"), -1.0, torch.tensor([0.1, 0.2, 0.3])],
                         ids=["str", "list", "complex", "object", "nan", "negative", "tensor of three"])
def test_a_bad_tolerance_fails_as_torchs_assert_close_fails(tolerance):
    with pytest.raises(Exception) as theirs:
        torch.testing.assert_close(EAGER, EAGER.clone(), rtol=tolerance, atol=tolerance)
    with pytest.raises(Exception) as ours:
        assert_trt_close(EAGER, EAGER.clone(), rtol=tolerance, atol=tolerance)
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_settings_targets_are_used_for_the_decision(targets):
    class Settings:
        target_compute_capabilities = {(7, 5)}

    targets("8.9")
    assert "targets Turing on TensorRT-RTX = True" in failure(torch.zeros(3, 4), EAGER, settings=Settings())


@pytest.mark.parametrize("actual, expected, heading, detail", [
    ([float("nan"), 1.0, 2.0], [1.0, float("nan"), 2.0], "trtcap: NaN output where eager is not NaN",
     "has 1 NaN element(s) where eager is not NaN"),
    ([float("inf"), 1.0], [float("-inf"), 1.0], "trtcap: Inf output where eager is not the same Inf",
     "has 1 Inf element(s) where eager is not the same Inf"),
])
def test_messages_stay_true_where_eager_has_nan_or_inf_elsewhere(actual, expected, heading, detail):
    with pytest.raises(AssertionError) as excinfo:
        assert_trt_close(torch.tensor(actual), torch.tensor(expected), equal_nan=True)
    lines = str(excinfo.value).splitlines()
    assert lines[0] == heading and detail in lines[1]


def test_zeros_against_all_nan_eager_is_no_all_zero_finding():
    """NaN is not a non-zero value eager produced: the comparison itself reports the mismatch."""
    with pytest.raises(AssertionError) as excinfo:
        assert_trt_close(torch.zeros(2), torch.full((2,), float("nan")))
    assert "all-zero output" not in str(excinfo.value)


def test_the_decision_line_keeps_a_declared_origin_on_it(targets):
    """The origin is the suite's text: its line break must not split the decision line, nor its ESC reach the
    terminal through pytest's report of the assertion."""
    targets("7.5", origin="ci\n\x1b[2Jforged")
    with pytest.raises(AssertionError) as info:
        assert_trt_close(torch.zeros(3), torch.ones(3))
    (line,) = [x for x in str(info.value).splitlines() if x.startswith("trtcap: targets Turing on TensorRT-RTX")]
    assert line.endswith("(targets 7.5 from ci\\n\\x1b[2Jforged)")
    assert "\x1b" not in str(info.value)
