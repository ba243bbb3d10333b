"""``trt_close.fast_passes`` may only say True where ``torch.testing.assert_close`` passes; it must say it for the
plain cases (or ``assert_trt_close`` would pay torch's pairing machinery on every comparison)."""

from __future__ import annotations

import pytest
import torch

from pytest_trtcap import assert_trt_close, trt_close

X = torch.linspace(-3, 3, 12).reshape(3, 4)
ZEROS = torch.zeros(3)
SMALL = torch.full((3,), 1e-7)


def nested(leaf, depth: int):
    for _ in range(depth):
        leaf = [leaf]
    return leaf

NAN = torch.tensor([1.0, float("nan")])
INF = torch.tensor([1.0, float("inf"), -float("inf")])

CASES = {
    "equal": (X, X.clone(), {}),
    "within default tolerance": (X, X + 1e-7, {}),
    "outside default tolerance": (X, X + 1e-3, {}),
    "given tolerances pass": (X, X + 0.05, {"rtol": 0, "atol": 0.1}),
    "given tolerances fail": (X, X + 0.05, {"rtol": 0, "atol": 0.01}),
    "rtol only": (X, X, {"rtol": 0.1}),
    "nan default": (NAN, NAN.clone(), {}),
    "nan equal_nan": (NAN, NAN.clone(), {"equal_nan": True}),
    "inf equal": (INF, INF.clone(), {}),
    "inf sign": (INF, -INF, {}),
    "negative zero": (torch.tensor([0.0]), torch.tensor([-0.0]), {}),
    "fp16": (X.half(), X.half() + 1e-4, {}),
    "bf16": (X.bfloat16(), X.bfloat16().clone(), {}),
    "bf16 differs": (X.bfloat16(), (X + 1e-1).bfloat16(), {}),
    "float64": (X.double(), X.double() + 1e-9, {}),
    "complex": (X.cfloat(), X.cfloat() * (1 + 1e-8), {}),
    "int equal": (torch.arange(5), torch.arange(5), {}),
    "int off by one": (torch.arange(5), torch.arange(1, 6), {}),
    "int with tolerance": (torch.arange(1, 6), torch.arange(1, 6) + 1, {"rtol": 1.0, "atol": 0}),
    "bool": (torch.tensor([True, False]), torch.tensor([True, False]), {}),
    "bool differs": (torch.tensor([True, False]), torch.tensor([True, True]), {}),
    "dtype differs": (X, X.double(), {}),
    "dtype differs unchecked": (X, X.double(), {"check_dtype": False}),
    "shape differs": (X, X.reshape(4, 3), {}),
    "broadcastable shapes": (X[:1], X[:1].expand(3, 4), {}),
    "non-contiguous": (X.t(), X.t().contiguous(), {}),
    "0-d": (torch.tensor(1.5), torch.tensor(1.5), {}),
    "empty": (torch.empty(0, 3), torch.empty(0, 3), {}),
    "meta": (torch.empty(3, device="meta"), torch.empty(3, device="meta"), {}),
    "parameter": (torch.nn.Parameter(X.clone()), X, {}),
    "requires grad": (X.clone().requires_grad_(), X, {}),
    "sparse": (X.to_sparse(), X.to_sparse(), {}),
    "nested equal": ({"a": [X, (X,)], "b": X}, {"b": X, "a": [X, (X,)]}, {}),
    "nested value differs": ({"a": [X, X]}, {"a": [X, X + 1]}, {}),
    "list against tuple": ([X, X], (X, X), {}),
    "length differs": ([X], [X, X], {}),
    "keys differ": ({"a": X}, {"b": X}, {}),
    "number leaves": ([1.0, X], [1.0, X], {}),
    "msg given": (X, X, {"msg": "custom"}),
    "nested 10 deep": (nested(X, 10), nested(X.clone(), 10), {}),
    "nested 40 deep": (nested(X, 40), nested(X.clone(), 40), {}),
    "zeros nested 10 deep": (nested(ZEROS, 10), nested(SMALL, 10), {}),
    "zeros nested 40 deep": (nested(ZEROS, 40), nested(SMALL, 40), {}),
    "zeros of another shape": (ZEROS, torch.ones(4), {}),
    "zeros of another dtype": (ZEROS, SMALL.double(), {}),
    "zeros of another dtype unchecked": (ZEROS, SMALL.double(), {"check_dtype": False}),
    "zeros in a shorter list": ([ZEROS], [SMALL, SMALL], {}),
    "tolerance str": (X, X, {"rtol": "0.1", "atol": "0.1"}),
    "tolerance list": (X, X, {"rtol": [0.1], "atol": [0.1]}),
    "tolerance negative": (X, X, {"rtol": -1.0, "atol": -1.0}),
    "tolerance nan": (X, X, {"rtol": float("nan"), "atol": 0.0}),
    "tolerance bool": (X, X, {"rtol": True, "atol": False}),
    "tolerance 0-d tensor": (X, X, {"rtol": torch.tensor(0.1), "atol": torch.tensor(0.1)}),
    "equal_nan str": (NAN, NAN.clone(), {"equal_nan": "yes"}),
}


def torch_passes(actual, expected, options) -> bool:
    try:
        torch.testing.assert_close(actual, expected, **options)
    except Exception:  # AssertionError, or the ValueError, TypeError, RuntimeError of a bad option
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_passes_only_where_torch_passes(name):
    actual, expected, options = CASES[name]
    if trt_close.fast_passes(actual, expected, torch, dict(options)):
        assert torch_passes(actual, expected, options)


@pytest.mark.parametrize("name", ["equal", "within default tolerance", "given tolerances pass", "nan equal_nan",
                                  "inf equal", "negative zero", "fp16", "bf16", "float64", "complex", "int equal",
                                  "int with tolerance", "bool", "non-contiguous", "0-d", "empty", "requires grad",
                                  "nested equal"])
def test_the_plain_passing_cases_take_the_fast_path(name):
    actual, expected, options = CASES[name]
    assert torch_passes(actual, expected, options)
    assert trt_close.fast_passes(actual, expected, torch, dict(options))


def outcome(actual, expected, options):
    try:
        assert_trt_close(actual, expected, **options)
    except Exception as exc:
        return type(exc), str(exc)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_assert_trt_close_says_the_same_with_and_without_the_fast_path(name, monkeypatch):
    """The fast path is only a shortcut: nested, mismatched or badly given, every input gets the answer (pass, or
    the same exception and words) that torch's own comparison leads to."""
    actual, expected, options = CASES[name]
    fast = outcome(actual, expected, dict(options))
    monkeypatch.setattr(trt_close, "fast_passes", lambda *args: False)
    assert fast == outcome(actual, expected, dict(options))
