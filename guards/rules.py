"""The one table of what each target capability cannot serve on TensorRT-RTX.

Validators, their target lists, the pytest markers and the rules table in docs/guards.md are all generated from
``RULES``: a new rule is one entry. Each rule names its node check in ``node_checks`` (or holds a callable of
its own); the checks load at the first node a rule is asked about, not with the table, which the plugin reads
in every pytest run to register its markers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from .environment import BF16, CDIST_MATMUL, CONV3D, FP32_GEMM, TURING, Capability

if TYPE_CHECKING:
    from .node_checks import Operands

ALL_TARGETS = "*"

#: Node check name -> the function, filled at first use.
_checks: dict[str, Callable[[Any, Any], bool]] = {}


def node_check(check: str | Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    """The function a rule's ``check`` names: a function of ``trtcap_guards.node_checks``, or the callable itself."""
    if callable(check):
        return check
    found = _checks.get(check)
    if found is None:
        found = _checks[check] = getattr(importlib.import_module(".node_checks", __package__), check)
    return found

# --- the table ---------------------------------------------------------------------------------


class Rule(NamedTuple):
    """What one target capability cannot serve on TensorRT-RTX, for one family of ops. (A NamedTuple, not a
    frozen dataclass: the plugin registers its markers from this table in every pytest run, and creating a frozen
    dataclass costs ten times as much.)"""

    name: str
    capability: Capability
    cannot_serve: str  # "FP32 GEMM": the phrase skip reasons and docs use
    targets: dict[str, Operands]  # op name -> operands the check reads; {ALL_TARGETS: ()} = every op
    check: str | Callable[[Any, Operands], bool]  # a function name in node_checks, or a callable
    validator: str  # name of the generated validator in guards.validators
    marker: str  # the pytest marker that skips tests needing what this rule forbids
    why: str  # support-matrix wording
    setting: str | None = None  # a CompilationSettings flag: the rule applies only while it is on (truthy)

    def applies_to(self, target_name: str) -> bool:
        return ALL_TARGETS in self.targets or target_name in self.targets

    def operands_for(self, target_name: str) -> Operands:
        return self.targets.get(target_name, self.targets.get(ALL_TARGETS, ()))

    def rejects(self, node: Any, target_name: str | None = None, settings: Any = None) -> bool:
        """True when ``node`` needs what this rule says the capability cannot serve. Never raises.

        ``settings`` (the compilation settings the validator was given) matter only to a rule with a ``setting``:
        without them the flag reads as off, the converter's default.
        """
        try:
            name = target_name if target_name is not None else target_name_of(getattr(node, "target", None))
            if not self.applies_to(name):
                return False
            if self.setting is not None and not getattr(settings, self.setting, False):
                return False
            return bool(node_check(self.check)(node, self.operands_for(name)))
        except Exception:
            return True  # an unreadable node is kept off the restricted capability


_TWO = ((0, "self"), (1, "other"))
GEMM_TARGETS: dict[str, Operands] = {
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
ATTENTION_TARGETS: dict[str, Operands] = {
    "aten.scaled_dot_product_attention.default": _QKV,
    "aten._scaled_dot_product_flash_attention.default": _QKV,
    "aten._scaled_dot_product_efficient_attention.default": _QKV,
    "aten._scaled_dot_product_cudnn_attention.default": _QKV,
}

RULES: tuple[Rule, ...] = (
    Rule(
        name="fp32_gemm",
        capability=TURING,
        cannot_serve="FP32 GEMM",
        targets=GEMM_TARGETS,
        check="fp32_operand",
        validator="gemm_capability_validator",
        marker=FP32_GEMM,
        why="FP32 GEMMs are not supported on Turing; static shapes give a null execution context, "
        "dynamic shapes run and return all zeros",
    ),
    Rule(
        name="fp32_attention",
        capability=TURING,
        cannot_serve="FP32 GEMM",
        targets=ATTENTION_TARGETS,
        check="fp32_operand",
        validator="attention_capability_validator",
        marker=FP32_GEMM,
        why="fused attention runs FP32 matmuls, which are not supported on Turing",
    ),
    Rule(
        name="fp32_acc_gemm",
        capability=TURING,
        cannot_serve="FP32 GEMM",
        targets=GEMM_TARGETS,
        check="fp16_operand",
        validator="gemm_capability_validator",
        marker=FP32_GEMM,
        why="with `use_fp32_acc=True` the converter casts FP16 GEMM operands to FP32: an FP32 GEMM on TensorRT",
        setting="use_fp32_acc",
    ),
    Rule(
        name="cdist_matmul",
        capability=TURING,
        cannot_serve="the cdist matrix multiply",
        targets={"aten._cdist_forward.default": ((0, "x1"), (1, "x2"))},
        check="cdist_emits_matmul",
        validator="cdist_forward_capability_validator",
        marker=CDIST_MATMUL,
        why="the p=2 matrix-multiply branch of cdist fails on Turing in FP16 and FP32 alike",
    ),
    Rule(
        name="conv3d",
        capability=TURING,
        cannot_serve="3D convolution",
        # tensorrt.conv_asym_pad: what 2.14's post-lowering pass fuse_pad_into_convolution makes of pad -> conv
        targets={"aten.convolution.default": ((0, "input"),), "tensorrt.conv_asym_pad.default": ((0, "x"),)},
        check="forward_conv3d",
        validator="convolution_capability_validator",
        marker=CONV3D,
        why="3D (5-D input) forward convolution is not supported on Turing (null execution context)",
    ),
    Rule(
        name="bf16",
        capability=TURING,
        cannot_serve="BF16",
        targets={ALL_TARGETS: ()},
        check="bf16_anywhere",
        validator="bf16_capability_validator",
        marker=BF16,
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


def rules_for(target_name: Any, rules: Sequence[Rule] = RULES) -> tuple[Rule, ...]:
    """The rules naming an op, given as its name or as the op itself (``torch.ops.aten.mm.default``)."""
    name = target_name_of(target_name)
    return tuple(r for r in rules if r.applies_to(name))


def explicit_targets(rules: Sequence[Rule] = RULES) -> tuple[str, ...]:
    """Every op a rule names explicitly (rules on every op excluded)."""
    return tuple(dict.fromkeys(t for r in rules for t in r.targets if t != ALL_TARGETS))


def markers() -> dict[str, tuple[Rule, ...]]:
    """Marker name -> the rules it stands for, in table order."""
    out: dict[str, tuple[Rule, ...]] = {}
    for rule in RULES:
        out[rule.marker] = out.get(rule.marker, ()) + (rule,)
    return out


def markdown_table(rules: Sequence[Rule] = RULES) -> str:
    """The rules as docs/guards.md shows them (a test keeps that copy in step with this table)."""
    rows = [
        "| capability | cannot serve | ops | validator | marker | why |",
        "|---|---|---|---|---|---|",
    ]
    for r in rules:
        ops = "every op" if ALL_TARGETS in r.targets else ", ".join(f"`{t}`" for t in r.targets)
        cap = f"SM {r.capability[0]}.{r.capability[1]}"
        rows.append(f"| {cap} | {r.cannot_serve} | {ops} | `{r.validator}` | `{r.marker}` | {r.why} |")
    return "\n".join(rows)
