"""A cheaper way to a *passing* ``torch.testing.assert_close`` for plain tensors, with the same answer.

``assert_close`` spends most of a small comparison in its pairing machinery (about 40-100 us here, against 10-30
us for the ``torch.isclose(...).all()`` it ends with). For plain strided tensors (and lists, tuples and dicts of
them) with equal dtype, device and shape, and only ``rtol``/``atol``/``equal_nan`` given, that ``isclose`` is the
whole of its decision. :func:`passes` answers True only when it has checked exactly that; anything else
(a mismatch, another option, a subclass, a sparse, quantized, meta or 8-bit float tensor, a non-tensor leaf) is
False, and the caller then runs torch's own comparison, which decides and words the failure.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

_OPTIONS = frozenset(("rtol", "atol", "equal_nan"))
_precisions: Dict[Any, Tuple[float, float]] = {}


def _default_tolerances(dtype: Any) -> Optional[Tuple[float, float]]:
    """torch's own table (``torch.testing._comparison._DTYPE_PRECISIONS``); None where it cannot be read."""
    if not _precisions:
        try:
            from torch.testing._comparison import _DTYPE_PRECISIONS
        except ImportError:  # pragma: no cover - a torch without the table: no fast path
            return None
        _precisions.update(_DTYPE_PRECISIONS)
    return _precisions.get(dtype, (0.0, 0.0))


def _leaf_pairs(actual: Any, expected: Any, torch: Any, out: List[Tuple[Any, Any]], depth: int = 0) -> bool:
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


def _tensor_passes(a: Any, e: Any, torch: Any, rtol: Optional[float], atol: Optional[float], equal_nan: bool) -> bool:
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


def passes(actual: Any, expected: Any, torch: Any, options: Dict[str, Any]) -> bool:
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
    pairs: List[Tuple[Any, Any]] = []
    if not _leaf_pairs(actual, expected, torch, pairs):
        return False
    return all(_tensor_passes(a, e, torch, rtol, atol, equal_nan) for a, e in pairs)
