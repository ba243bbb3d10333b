"""The placement audit: nodes a partitioner put on TensorRT that the declared targets cannot serve.

The guards act through the converter registry's validators; the audit does not consult them. It reads each node
of every ``_run_on_acc*`` block itself (its op, and its operands' dtypes and ranks from ``meta["val"]``) and asks
the rules table, so a target the guards never saw (a new converter, a node created by a lowering pass, guards
switched off) still shows up. Works on CPU: nothing is built or run.
"""

from __future__ import annotations

from typing import Any, List, NamedTuple, Optional

import trtcap_guards as guards
from trtcap_guards.rules import RULES, Rule, target_name_of

from .partitions import ACC_PREFIX
from .text import one_line


class UnservablePlacement(NamedTuple):
    """One node placed on TensorRT that a rule says the declared targets cannot serve."""

    block: str  # the ``_run_on_acc*`` child holding it (a dotted path when nested)
    node: str  # the fx node's name
    op: str  # its target, e.g. ``aten.linear.default``
    rule: str  # the rule's name, e.g. ``fp32_gemm``

    def describe(self) -> str:
        rule = _RULES_BY_NAME.get(self.rule)
        what = f"{rule.cannot_serve} on SM {rule.capability[0]}.{rule.capability[1]}" if rule else self.rule
        return f"{self.block}: {self.node} ({self.op}) -> {self.rule}: {what}"


_RULES_BY_NAME = {r.name: r for r in RULES}
#: The hierarchical partitioner's name for the TensorRT backend (``backend_support_map`` and its block names).
TENSORRT_BACKEND = "tensorrt"


def _acc_blocks(module: Any) -> List[tuple]:
    named = getattr(module, "named_modules", None)
    if not callable(named):
        hint = " unpack the partitioner's result (module, ...)" if isinstance(module, tuple) else ""
        raise TypeError(
            "unservable_placements: expected the torch.nn.Module a Torch-TensorRT partitioner returned, "
            f"got a {type(module).__name__}:{hint or ' ' + repr(module)[:80]}"
        )
    return [(name, child) for name, child in named()
            if _on_tensorrt(name.rsplit(".", 1)[-1]) and getattr(child, "graph", None) is not None]


def _on_tensorrt(block: str) -> bool:
    """Whether a child named ``block`` runs on TensorRT. The fast and global partitioners name their blocks
    ``_run_on_acc_<n>`` (the resource partitioner adds ``_resource_split_<m>``); the hierarchical one names each
    backend's ``_run_on_acc_<backend>_<n>``, and only its ``tensorrt`` backend (its default name) is TensorRT."""
    if not block.startswith(ACC_PREFIX):
        return False
    first = block[len(ACC_PREFIX):].lstrip("_").split("_", 1)[0]
    return first.isdigit() or first in ("", TENSORRT_BACKEND)


def _rejecting(node: Any, rules: List[Rule], settings: Any) -> Optional[Rule]:
    name = target_name_of(getattr(node, "target", None))
    for rule in rules:
        if rule.rejects(node, name, settings):
            return rule
    return None


def unservable_placements(module: Any, settings: Any = None) -> List[UnservablePlacement]:
    """Every ``call_function`` node of ``module``'s ``_run_on_acc*`` blocks that a rule forbids on the declared
    targets (``settings.target_compute_capabilities`` > declared > ``TRTCAP_TARGET_SM`` > host device), in graph
    order. Empty off Turing, with the standard backend, or when nothing forbidden was placed on TensorRT."""
    blocks = _acc_blocks(module)  # refuses what is no module before anything else: no silent pass
    decision = guards.capability_decision(settings)
    rules = [r for r in RULES if decision.targets_capability(r.capability)]
    if not rules:
        return []
    found = []
    for block, child in blocks:
        for node in child.graph.nodes:
            if node.op != "call_function":
                continue
            rule = _rejecting(node, rules, settings)
            if rule is not None:
                found.append(UnservablePlacement(block, node.name, target_name_of(node.target), rule.name))
    return found


def describe_placements(placements: List[UnservablePlacement]) -> str:
    return "\n".join(f"  {p.describe()}" for p in placements)


def assert_servable_placements(module: Any, settings: Any = None) -> None:
    """Fail, listing each unservable placement and the capability decision, when :func:`unservable_placements`
    finds any."""
    found = unservable_placements(module, settings)
    if found:
        decision = guards.capability_decision(settings)
        raise AssertionError(
            f"{len(found)} node(s) placed on TensorRT that the declared targets cannot serve:\n"
            f"{describe_placements(found)}\n"
            f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"
        )
