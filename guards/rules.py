"""The one table of what each target capability cannot serve on TensorRT-RTX.

Validators, their target lists, the pytest markers and the README table are all generated from
``RULES``: a new rule is one entry. Node checks read dtypes and shapes from ``meta["val"]`` and are
total: whatever node they are handed, they answer and never raise.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, NamedTuple, Optional, Sequence, Tuple

from .capabilities import TURING, Capability

#: Operand positions as (positional index, keyword name).
Operands = Tuple[Tuple[int, str], ...]

ALL_TARGETS = "*"

_dtypes: Dict[str, Any] = {}


def _dtype(name: str) -> Any:
    if not _dtypes:
        import torch

        _dtypes.update(float32=torch.float32, bfloat16=torch.bfloat16)
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


def _shape_of(obj: Any) -> Optional[Tuple[Any, ...]]:
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
    """Any of the listed operands is FP32."""
    fp32 = _dtype("float32")
    # a plain loop, not any() over a generator (SIM110): this runs for every GEMM node on Turing
    for index, name in operands:  # noqa: SIM110
        if _dtype_of(_arg(node, index, name)) == fp32:
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


# --- the table ---------------------------------------------------------------------------------


class Rule(NamedTuple):
    """What one target capability cannot serve on TensorRT-RTX, for one family of ops. (A NamedTuple, not a
    frozen dataclass: the plugin registers its markers from this table in every pytest run, and creating a frozen
    dataclass costs ten times as much.)"""

    name: str
    capability: Capability
    cannot_serve: str  # "FP32 GEMM": the phrase skip reasons and docs use
    targets: Dict[str, Operands]  # op name -> operands the check reads; {ALL_TARGETS: ()} = every op
    check: Callable[[Any, Operands], bool]
    validator: str  # name of the generated validator in guards.validators
    marker: str  # the pytest marker that skips tests needing what this rule forbids
    why: str  # support-matrix wording

    def applies_to(self, target_name: str) -> bool:
        return ALL_TARGETS in self.targets or target_name in self.targets

    def operands_for(self, target_name: str) -> Operands:
        return self.targets.get(target_name, self.targets.get(ALL_TARGETS, ()))

    def rejects(self, node: Any, target_name: Optional[str] = None) -> bool:
        """True when ``node`` needs what this rule says the capability cannot serve. Never raises."""
        try:
            name = target_name if target_name is not None else target_name_of(getattr(node, "target", None))
            if not self.applies_to(name):
                return False
            return bool(self.check(node, self.operands_for(name)))
        except Exception:
            return True  # an unreadable node is kept off the restricted capability


_TWO = ((0, "self"), (1, "other"))
GEMM_TARGETS: Dict[str, Operands] = {
    "aten.matmul": _TWO,
    "aten.matmul.default": _TWO,
    "aten.mm.default": ((0, "self"), (1, "mat2")),
    "aten.bmm.default": ((0, "self"), (1, "mat2")),
    "aten.mv.default": ((0, "self"), (1, "vec")),
    "aten.dot.default": ((0, "self"), (1, "tensor")),
    "aten.addmm.default": ((1, "mat1"), (2, "mat2")),
    "aten.linear.default": ((0, "input"), (1, "weight")),
}
_QKV = ((0, "query"), (1, "key"), (2, "value"))
ATTENTION_TARGETS: Dict[str, Operands] = {
    "aten.scaled_dot_product_attention.default": _QKV,
    "aten._scaled_dot_product_flash_attention.default": _QKV,
    "aten._scaled_dot_product_efficient_attention.default": _QKV,
    "aten._scaled_dot_product_cudnn_attention.default": _QKV,
}

RULES: Tuple[Rule, ...] = (
    Rule(
        name="fp32_gemm",
        capability=TURING,
        cannot_serve="FP32 GEMM",
        targets=GEMM_TARGETS,
        check=fp32_operand,
        validator="gemm_capability_validator",
        marker="trt_fp32_gemm",
        why="FP32 GEMMs are not supported on Turing; static shapes give a null execution context, "
        "dynamic shapes run and return all zeros",
    ),
    Rule(
        name="fp32_attention",
        capability=TURING,
        cannot_serve="FP32 GEMM",
        targets=ATTENTION_TARGETS,
        check=fp32_operand,
        validator="attention_capability_validator",
        marker="trt_fp32_gemm",
        why="fused attention runs FP32 matmuls, which are not supported on Turing",
    ),
    Rule(
        name="cdist_matmul",
        capability=TURING,
        cannot_serve="the cdist matrix multiply",
        targets={"aten._cdist_forward.default": ((0, "x1"), (1, "x2"))},
        check=cdist_emits_matmul,
        validator="cdist_forward_capability_validator",
        marker="trt_cdist_matmul",
        why="the p=2 matrix-multiply branch of cdist fails on Turing in FP16 and FP32 alike",
    ),
    Rule(
        name="conv3d",
        capability=TURING,
        cannot_serve="3D convolution",
        # tensorrt.conv_asym_pad: what 2.14's post-lowering pass fuse_pad_into_convolution makes of pad -> conv
        targets={"aten.convolution.default": ((0, "input"),), "tensorrt.conv_asym_pad.default": ((0, "x"),)},
        check=forward_conv3d,
        validator="convolution_capability_validator",
        marker="trt_conv3d",
        why="3D (5-D input) forward convolution is not supported on Turing (null execution context)",
    ),
    Rule(
        name="bf16",
        capability=TURING,
        cannot_serve="BF16",
        targets={ALL_TARGETS: ()},
        check=bf16_anywhere,
        validator="bf16_capability_validator",
        marker="trt_bf16",
        why="Turing has no BF16 hardware; BF16 layers crash the build",
    ),
)


def target_name_of(target: Any) -> str:
    """``aten.mm.default`` for an OpOverload, ``aten.matmul`` for a packet, ``str()`` otherwise."""
    if isinstance(target, str):
        return target
    try:
        return str(target)
    except Exception:
        return repr(type(target))


def rules_for(target_name: str, rules: Sequence[Rule] = RULES) -> Tuple[Rule, ...]:
    return tuple(r for r in rules if r.applies_to(target_name))


def explicit_targets(rules: Sequence[Rule] = RULES) -> Tuple[str, ...]:
    """Every op a rule names explicitly (rules on every op excluded)."""
    return tuple(dict.fromkeys(t for r in rules for t in r.targets if t != ALL_TARGETS))


def markers() -> Dict[str, Tuple[Rule, ...]]:
    """Marker name -> the rules it stands for, in table order."""
    out: Dict[str, Tuple[Rule, ...]] = {}
    for rule in RULES:
        out[rule.marker] = out.get(rule.marker, ()) + (rule,)
    return out


def markdown_table(rules: Sequence[Rule] = RULES) -> str:
    """The rules as the README shows them (a test keeps the README in step with this table)."""
    rows = [
        "| capability | cannot serve | ops | validator | marker | why |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        ops = "every op" if ALL_TARGETS in r.targets else ", ".join(f"`{t}`" for t in r.targets)
        cap = f"SM {r.capability[0]}.{r.capability[1]}"
        rows.append(f"| {cap} | {r.cannot_serve} | {ops} | `{r.validator}` | `{r.marker}` | {r.why} |")
    return "\n".join(rows)
