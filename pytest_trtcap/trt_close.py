"""``assert_trt_close``: ``torch.testing.assert_close`` that names the silent failure modes of TensorRT-RTX.

When TensorRT-RTX is handed an op it cannot serve on the target GPU (an FP32 GEMM on Turing, say) with dynamic
shapes, the engine runs and returns all zeros. A plain comparison with eager then reports a numeric mismatch, or,
with loose tolerances on small outputs, passes. Here an all-zero output where eager's is not is reported as such
(per output tensor of a nested structure), as are NaN and Inf, together with the capability decision and the
rules that apply at the declared targets; the numeric comparison is torch's own.

A passing comparison costs torch's ``isclose`` (the pairing machinery of ``assert_close`` is skipped where
:func:`fast_passes` shows it would pass) plus one element read per output: only an output whose first
element is zero is scanned in full. torch is imported when the function is first called, never at plugin load.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import trtcap_guards as guards
from trtcap_guards import RULES

from .escaping import one_line

ALL_ZERO = "all-zero output where eager is non-zero"
NAN = "NaN output where eager is not NaN"
INF = "Inf output where eager is not the same Inf"
MISMATCH = "output mismatch (no all-zero, NaN or Inf output)"
STRUCTURE = "output does not match eager in structure (torch's report follows)"


def assert_trt_close(actual: Any, expected: Any, *, settings: Any = None, **tolerances: Any) -> None:
    """Like ``torch.testing.assert_close(actual, expected, **tolerances)``; an all-zero, NaN or Inf output
    (compared with ``expected``, tensor by tensor) fails with its own message before any numeric mismatch is
    reported, and an all-zero output fails even where the tolerances would let it pass."""
    import torch

    check_dtype = tolerances.get("check_dtype", True)
    if not fast_passes(actual, expected, torch, tolerances):
        try:
            torch.testing.assert_close(actual, expected, **tolerances)
        except AssertionError as exc:
            raise AssertionError(_failure(actual, expected, torch, check_dtype, str(exc), settings)) from None
    if isinstance(actual, torch.Tensor):  # the common case, without walking a structure
        if not _first_is_zero(actual):
            return
    elif not any(_first_is_zero(a) for a in _leaves(actual, torch)):
        return
    zeros = [(ALL_ZERO, path, _zero_detail(path, a, e)) for path, a, e in _walk(actual, expected, torch, check_dtype)
             .pairs if _may_be_all_zero(a) and _all_zero_where_eager_is_not(a, e)]
    if zeros:
        raise AssertionError(_message(zeros, settings))


def _failure(actual: Any, expected: Any, torch: Any, check_dtype: Any, report: str, settings: Any) -> str:
    """The message for a comparison torch failed with ``report``: the all-zero, NaN and Inf outputs among the
    tensors that match eager in structure, and torch's report where something does not."""
    walk = _walk(actual, expected, torch, check_dtype)
    problems = _problems(walk.pairs, torch)
    if problems:
        return _message(problems, settings, report if walk.mismatched else None)
    return f"trtcap: {STRUCTURE if walk.mismatched else MISMATCH}\n{report}\n{_decision(settings)}"


def _first_is_zero(tensor: Any) -> bool:
    """Whether the first element is zero: if not, the tensor is not all zeros (one element read, no copy)."""
    try:
        if tensor.is_contiguous():
            return tensor.numel() > 0 and not tensor.reshape(-1)[0].item()
        return tensor.numel() > 0 and not tensor[(0,) * tensor.dim()].item()
    except Exception:  # sparse, quantized, meta...: let the full check decide
        return True


def _may_be_all_zero(tensor: Any) -> bool:
    """Cheap before exact: the first element, then (contiguous tensors) an evenly spaced sample of 256."""
    if not _first_is_zero(tensor):
        return False
    try:
        if tensor.is_contiguous() and tensor.numel() > 256:
            flat = tensor.reshape(-1)
            return not bool(flat[:: flat.numel() // 256].any())
    except Exception:
        pass
    return True


def _all_zero_where_eager_is_not(a: Any, e: Any) -> bool:
    try:
        if a.numel() == 0 or bool(a.any()):
            return False
        # eager's non-zero values, NaN excluded: NaN is no value a zero output failed to produce
        return bool(((e != 0) & (e == e)).any())
    except Exception:  # a tensor these checks cannot read: torch's comparison passed, so does this
        return False


def _zero_detail(path: str, a: Any, e: Any) -> str:
    nonzero = int(((e != 0) & (e == e)).sum())
    return f"{path} (shape {tuple(a.shape)}, {a.dtype}) is all zeros; eager has {nonzero} non-zero element(s)"


def _leaves(value: Any, torch: Any) -> Iterator[Any]:
    """Every tensor of a nested structure, at any depth (a walk, not a recursion)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            stack.extend(reversed(value))
        elif isinstance(value, Mapping):
            stack.extend(reversed(list(value.values())))


class Walk(NamedTuple):
    """Two structures read side by side, as ``assert_close`` pairs them."""

    pairs: list[tuple[str, Any, Any]]  # (path, actual, expected): tensors that match in shape (and dtype)
    mismatched: bool  # somewhere they do not match in structure (shape, dtype, length, keys or type)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def _walk(actual: Any, expected: Any, torch: Any, check_dtype: bool = True) -> Walk:
    """Pair the tensors of ``actual`` and ``expected`` at any depth, in order; a pair or a container that does not
    match in structure is left out (only torch's report can say what is wrong there) and marks the walk."""
    pairs: list[tuple[str, Any, Any]] = []
    mismatched = False
    stack = [("output", actual, expected)]
    while stack:
        path, a, e = stack.pop()
        tensors = isinstance(a, torch.Tensor), isinstance(e, torch.Tensor)
        if all(tensors):
            same = a.shape == e.shape and (a.dtype == e.dtype or not check_dtype)
            pairs.extend([(path, a, e)] if same else [])
            mismatched |= not same
        elif any(tensors):
            mismatched = True
        elif _is_sequence(a) and _is_sequence(e) and len(a) == len(e):
            stack.extend((f"{path}[{i}]", a[i], e[i]) for i in reversed(range(len(a))))
        elif isinstance(a, Mapping) and isinstance(e, Mapping) and a.keys() == e.keys():
            stack.extend((f"{path}[{k!r}]", a[k], e[k]) for k in reversed(list(a)))
        elif _is_sequence(a) or _is_sequence(e) or isinstance(a, Mapping) or isinstance(e, Mapping):
            mismatched = True
    return Walk(pairs, mismatched)


Problem = tuple[str, str, str]  # (kind, path, detail)


def _problems(pairs: list[tuple[str, Any, Any]], torch: Any) -> list[Problem]:
    out: list[Problem] = []
    for path, a, e in pairs:
        try:
            problem = _tensor_problem(path, a.detach(), e.detach(), torch)
        except Exception:  # a tensor these checks cannot read: torch's comparison has the last word
            problem = None
        if problem is not None:
            out.append(problem)
    return out


def _tensor_problem(path: str, a: Any, e: Any, torch: Any) -> Problem | None:
    what = f"{path} (shape {tuple(a.shape)}, {a.dtype})"
    if _all_zero_where_eager_is_not(a, e):
        return ALL_ZERO, path, _zero_detail(path, a, e)
    if not (a.is_floating_point() or a.is_complex()):
        return None
    same = a.shape == e.shape
    nan = torch.isnan(a) & ~torch.isnan(e) if same else torch.isnan(a)
    if bool(nan.any()) and (same or not bool(torch.isnan(e).any())):
        return NAN, path, f"{what} has {int(nan.sum())} NaN element(s) where eager is not NaN"
    inf = torch.isinf(a) & (a != e) if same else torch.isinf(a)
    if bool(inf.any()) and (same or not bool(torch.isinf(e).any())):
        return INF, path, f"{what} has {int(inf.sum())} Inf element(s) where eager is not the same Inf"
    return None


def _decision(settings: Any) -> str:
    decision = guards.capability_decision(settings)
    return f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"


def _rules_lines(settings: Any) -> list[str]:
    decision = guards.capability_decision(settings)
    rules = [r for r in RULES if decision.targets_capability(r.capability)]
    if not rules:
        return ["trtcap: rules that apply at the declared targets: none"]
    return ["trtcap: rules that apply at the declared targets:"] + [
        f"  {r.name}: {r.cannot_serve} on SM {r.capability[0]}.{r.capability[1]} ({r.why})" for r in rules]


def _message(problems: list[Problem], settings: Any, structure_report: str | None = None) -> str:
    kinds = list(dict.fromkeys(kind for kind, _, _ in problems))
    lines = [f"trtcap: {' and '.join(kinds)}"]
    lines.extend(f"  {detail}" for _, _, detail in problems)
    if structure_report is not None:
        lines += [f"trtcap: {STRUCTURE}", structure_report]
    lines += [_decision(settings), *_rules_lines(settings),
              "trtcap: on a GPU, an op the target cannot serve returns zeros with dynamic shapes: check the placement "
              "(pytest_trtcap.unservable_placements)"]
    return "\n".join(lines)


# --- the fast path to a passing comparison -------------------------------------------------------------------------
# A cheaper way to a *passing* ``torch.testing.assert_close`` for plain tensors, with the same answer.
#
# ``assert_close`` spends most of a small comparison in its pairing machinery (about 40-100 us here, against 10-30
# us for the ``torch.isclose(...).all()`` it ends with). For plain strided tensors (and lists, tuples and dicts of
# them) with equal dtype, device and shape, and only ``rtol``/``atol``/``equal_nan`` given, that ``isclose`` is the
# whole of its decision. :func:`fast_passes` answers True only when it has checked exactly that; anything else
# (a mismatch, another option, a subclass, a sparse, quantized, meta or 8-bit float tensor, a non-tensor leaf) is
# False, and the caller then runs torch's own comparison, which decides and words the failure.

_OPTIONS = frozenset(("rtol", "atol", "equal_nan"))
_precisions: dict[Any, tuple[float, float]] = {}


def _default_tolerances(dtype: Any) -> tuple[float, float] | None:
    """torch's own table (``torch.testing._comparison._DTYPE_PRECISIONS``); None where it cannot be read."""
    if not _precisions:
        try:
            from torch.testing._comparison import _DTYPE_PRECISIONS
        except ImportError:  # pragma: no cover - a torch without the table: no fast path
            return None
        _precisions.update(_DTYPE_PRECISIONS)
    return _precisions.get(dtype, (0.0, 0.0))


def _leaf_pairs(actual: Any, expected: Any, torch: Any, out: list[tuple[Any, Any]], depth: int = 0) -> bool:
    """Collect tensor pairs of two structures of the same shape; False for anything torch might treat otherwise."""
    tensor = torch.Tensor
    if type(actual) is tensor and type(expected) is tensor:
        out.append((actual, expected))
        return True
    if depth > 16 or type(actual) is not type(expected):
        return False
    if type(actual) in (list, tuple):
        return len(actual) == len(expected) and all(
            _leaf_pairs(a, e, torch, out, depth + 1) for a, e in zip(actual, expected))
    if type(actual) is dict:
        return actual.keys() == expected.keys() and all(
            _leaf_pairs(actual[k], expected[k], torch, out, depth + 1) for k in actual)
    return False


def _tensor_passes(a: Any, e: Any, torch: Any, rtol: float | None, atol: float | None, equal_nan: bool) -> bool:
    dtype = a.dtype
    if (dtype != e.dtype or a.shape != e.shape or a.device != e.device or a.layout is not torch.strided
            or e.layout is not torch.strided or a.is_quantized or a.device.type in ("meta", "mps")
            or (dtype.is_floating_point and dtype.itemsize == 1)):
        return False
    if rtol is None:
        tolerances = _default_tolerances(dtype)
        if tolerances is None:
            return False
        rtol, atol = tolerances
    return bool(torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan).all())


def _plain_tolerance(value: Any) -> bool:
    """None, or a non-negative int or float (NaN is not): what ``isclose`` takes as torch's comparison does."""
    return value is None or (type(value) in (int, float) and value >= 0)


def fast_passes(actual: Any, expected: Any, torch: Any, options: dict[str, Any]) -> bool:
    """True only where ``torch.testing.assert_close(actual, expected, **options)`` is known to pass."""
    if not _OPTIONS.issuperset(options):
        return False
    rtol, atol = options.get("rtol"), options.get("atol")
    if (rtol is None) != (atol is None):  # torch raises a ValueError for that: let it
        return False
    equal_nan = options.get("equal_nan", False)
    if not (_plain_tolerance(rtol) and _plain_tolerance(atol) and type(equal_nan) is bool):
        return False  # torch words a bad option its own way (a RuntimeError naming the pair): let it
    if type(actual) is torch.Tensor and type(expected) is torch.Tensor:  # the common case, no list
        return _tensor_passes(actual, expected, torch, rtol, atol, equal_nan)
    pairs: list[tuple[Any, Any]] = []
    if not _leaf_pairs(actual, expected, torch, pairs):
        return False
    return all(_tensor_passes(a, e, torch, rtol, atol, equal_nan) for a, e in pairs)
