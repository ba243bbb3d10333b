"""``fast_close.passes`` may only say True where ``torch.testing.assert_close`` passes; it must say it for the
plain cases (or ``assert_trt_close`` would pay torch's pairing machinery on every comparison)."""

from __future__ import annotations

import pytest
import torch

from pytest_trtcap import fast_close

X = torch.linspace(-3, 3, 12).reshape(3, 4)
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
}


def torch_passes(actual, expected, options) -> bool:
    try:
        torch.testing.assert_close(actual, expected, **options)
    except (AssertionError, ValueError, TypeError):
        return False
    return True


@pytest.mark.parametrize("name", sorted(CASES))
def test_passes_only_where_torch_passes(name):
    actual, expected, options = CASES[name]
    if fast_close.passes(actual, expected, torch, dict(options)):
        assert torch_passes(actual, expected, options)


@pytest.mark.parametrize("name", ["equal", "within default tolerance", "given tolerances pass", "nan equal_nan",
                                  "inf equal", "negative zero", "fp16", "bf16", "float64", "complex", "int equal",
                                  "int with tolerance", "bool", "non-contiguous", "0-d", "empty", "requires grad",
                                  "nested equal"])
def test_the_plain_passing_cases_take_the_fast_path(name):
    actual, expected, options = CASES[name]
    assert torch_passes(actual, expected, options)
    assert fast_close.passes(actual, expected, torch, dict(options))
