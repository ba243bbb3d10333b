"""The node checks the rules table names: True means "the target cannot serve this node".

Apart from the table (``rules``) because the table also feeds the pytest markers, which every pytest run of an
environment registers, while these checks run only where Torch-TensorRT partitions a graph. They read dtypes and
shapes from ``meta["val"]`` (else ``meta["tensor_meta"]``) and are total: whatever node they are handed, they
answer and never raise.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

#: Operand positions as (positional index, keyword name).
Operands = tuple[tuple[int, str], ...]

_dtypes: dict[str, Any] = {}


def _dtype(name: str) -> Any:
    if not _dtypes:
        import torch

        _dtypes.update(float32=torch.float32, float64=torch.float64, float16=torch.float16, bfloat16=torch.bfloat16)
    return _dtypes[name]


def _val(obj: Any) -> Any:
    """The example value of an fx node (FakeTensor/tensor), or the object itself if it is a tensor."""
    meta = getattr(obj, "meta", None)
    if isinstance(meta, dict):
        val = meta.get("val")
        if val is None:
            val = meta.get("tensor_meta")
        return val
    return obj if hasattr(obj, "dtype") and hasattr(obj, "shape") else None


def _dtype_of(obj: Any) -> Any:
    return getattr(_val(obj), "dtype", None)


def _shape_of(obj: Any) -> tuple[Any, ...] | None:
    shape = getattr(_val(obj), "shape", None)
    try:
        return tuple(shape) if shape is not None else None
    except TypeError:
        return None


def _arg(node: Any, index: int, name: str, default: Any = None) -> Any:
    args = getattr(node, "args", None)
    if isinstance(args, (tuple, list)) and len(args) > index:
        return args[index]
    kwargs = getattr(node, "kwargs", None)
    if isinstance(kwargs, dict):
        return kwargs.get(name, default)
    return default


def _operands(node: Any, operands: Operands) -> Iterator[Any]:
    for index, name in operands:
        yield _arg(node, index, name)


# --- node checks: True means "the target cannot serve this node" ---------------------------------


def fp32_operand(node: Any, operands: Operands) -> bool:
    """Any of the listed operands is FP32, or FP64: TensorRT has no double, and Torch-TensorRT hands FP64 tensors
    to it as FP32 (``dtype.f64`` maps to ``trt.DataType.FLOAT``; ``truncate_double`` truncates double weights)."""
    return _operand_has_dtype(node, operands, (_dtype("float32"), _dtype("float64")))


def fp16_operand(node: Any, operands: Operands) -> bool:
    """Any of the listed operands is FP16 (the rule using it applies only under ``use_fp32_acc``, where the GEMM
    converter casts FP16 operands to FP32)."""
    return _operand_has_dtype(node, operands, (_dtype("float16"),))


def _operand_has_dtype(node: Any, operands: Operands, dtypes: tuple[Any, ...]) -> bool:
    """Whether a listed operand has one of ``dtypes``, in one pass over them."""
    # a plain loop, not any() over a generator (SIM110): this runs for every GEMM node on Turing
    for index, name in operands:  # noqa: SIM110
        if _dtype_of(_arg(node, index, name)) in dtypes:
            return True
    return False


def cdist_emits_matmul(node: Any, operands: Operands) -> bool:
    """The cdist converter's matrix-multiply branch: p == 2 and (mode 1, or mode 0/None with > 25 rows).

    Unknown (symbolic) row counts count as "may exceed 25": the safe side on Turing.
    """
    p = _arg(node, 2, "p")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or p != 2:
        return False
    mode = _arg(node, 3, "compute_mode")
    if mode is not None and (isinstance(mode, bool) or not isinstance(mode, int)):
        return False
    if mode == 1:
        return True
    if mode not in (0, None):
        return False
    for arg in _operands(node, operands):
        shape = _shape_of(arg)
        if shape is None or len(shape) < 2:
            continue
        rows = shape[-2]
        if not isinstance(rows, int) or rows > 25:
            return True
    return False


def forward_conv3d(node: Any, operands: Operands) -> bool:
    """A forward (not transposed) convolution whose input (the first listed operand) is 5-D.

    Only ``aten.convolution`` has a ``transposed`` flag (position 6); ``tensorrt.conv_asym_pad``'s position 6 is
    its dilation list, never ``True``, and that op is always a forward convolution.
    """
    if _arg(node, 6, "transposed", False) is True:
        return False
    index, name = operands[0] if operands else (0, "input")
    shape = _shape_of(_arg(node, index, name))
    return shape is not None and len(shape) == 5


# ARG001 is wrong here: Rule.check calls every check as check(node, operands); this one reads all of the node.
def bf16_anywhere(node: Any, operands: Operands) -> bool:  # noqa: ARG001
    """A bfloat16 tensor among the node's inputs or outputs."""
    bf16 = _dtype("bfloat16")
    meta = getattr(node, "meta", None)
    outputs = meta.get("val") if isinstance(meta, dict) else None
    args = getattr(node, "args", None)
    kwargs = getattr(node, "kwargs", None)
    inputs = (
        args if isinstance(args, (tuple, list)) else (),
        kwargs if isinstance(kwargs, dict) else {},
    )
    return _leaf_has_dtype(outputs, bf16) or _leaf_has_dtype(inputs, bf16)


def _leaf_has_dtype(values: Any, dtype: Any, depth: int = 0) -> bool:
    """Whether a leaf of ``values`` (tuples, lists and dict values, four levels deep) has ``dtype``.

    Plain loops, no generator per level: this runs for every node on Turing targets.
    """
    if depth < 4:
        if isinstance(values, (tuple, list)):
            for v in values:  # noqa: SIM110 - no generator per level, as the docstring says
                if _leaf_has_dtype(v, dtype, depth + 1):
                    return True
            return False
        if isinstance(values, dict):
            for v in values.values():  # noqa: SIM110 - no generator per level, as the docstring says
                if _leaf_has_dtype(v, dtype, depth + 1):
                    return True
            return False
    return bool(_dtype_of(values) == dtype)
