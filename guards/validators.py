"""Capability validators generated from the rules table.

Signature ``(node, settings=None) -> bool``; True means TensorRT may take the node. They consult the one
predicate (:func:`guards.targets.capability_decision`) first, so on a non-Turing build they cost a cached
look-up. They are total: a node they cannot read is answered, never raised on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .rules import RULES, Rule, target_name_of
from .targets import capability_decision

Validator = Callable[..., bool]


def rejecting_rule(node: Any, settings: Any = None, rules: Sequence[Rule] = RULES,
                   target_name: str | None = None) -> Rule | None:
    """The first rule that forbids ``node`` for the current targets, or None. Never raises."""
    try:
        decision = capability_decision(settings)
    except ValueError:
        # A malformed TRTCAP_TARGET_SM is reported by whoever reads it for the user; a validator
        # must still answer. Treat the target as unknown: nothing is forbidden.
        return None
    try:
        name = target_name if target_name is not None else target_name_of(getattr(node, "target", None))
        for rule in rules:
            if decision.targets_capability(rule.capability) and rule.rejects(node, name, settings):
                return rule
    except Exception:
        # Unreadable node on a build that targets a restricted capability: keep it off TensorRT.
        restricted = [r for r in rules if decision.targets_capability(r.capability)]
        return restricted[0] if restricted else None
    return None


def make_validator(rules: Sequence[Rule], name: str) -> Validator:
    rules = tuple(rules)

    def validator(node: Any, settings: Any = None) -> bool:
        return rejecting_rule(node, settings, rules) is None

    validator.__name__ = validator.__qualname__ = name
    validator.__doc__ = "Rejects: " + "; ".join(
        f"{r.cannot_serve} on SM {r.capability[0]}.{r.capability[1]}" for r in rules
    )
    validator.rules = rules  # type: ignore[attr-defined]
    return validator


def _build() -> dict[str, Validator]:
    by_name: dict[str, list] = {}
    for rule in RULES:
        by_name.setdefault(rule.validator, []).append(rule)
    return {name: make_validator(rules, name) for name, rules in by_name.items()}


VALIDATORS: dict[str, Validator] = _build()

gemm_capability_validator = VALIDATORS["gemm_capability_validator"]
attention_capability_validator = VALIDATORS["attention_capability_validator"]
cdist_forward_capability_validator = VALIDATORS["cdist_forward_capability_validator"]
convolution_capability_validator = VALIDATORS["convolution_capability_validator"]
bf16_capability_validator = VALIDATORS["bf16_capability_validator"]
