"""The registry review: every converter target of the supported Torch-TensorRT, judged against the rules.

A guard covers only the targets its rule names, and each Torch-TensorRT release adds converters (and lowering
passes that create new nodes, like 2.14's ``tensorrt.conv_asym_pad``). The checked-in review
(:mod:`trtcap_guards.review_2_14`) says, for every target of the registry, which rule guards it or that it was
reviewed and carries none of the rules' capabilities. :func:`unreviewed_targets` turns a new release's additions
into a list instead of a silent hole; the plugin's header and summary say how many there are.
"""

from __future__ import annotations

from typing import Any

from .live_registry import loaded_converter_registry
from .registry import registry_dicts
from .review_2_14 import NONE, REVIEW, TORCH_TENSORRT_VERSION
from .rules import ALL_TARGETS, RULES, Rule, target_name_of

__all__ = ["NONE", "REVIEW", "TORCH_TENSORRT_VERSION", "describe_unreviewed", "review_name", "review_problems",
           "unreviewed_targets"]


def review_name(target: Any) -> str:
    """A registry key's stable name: ``aten.mm.default`` for an operator, ``module.qualname`` for a Python function
    (``_operator.add``, ``torch.sym_min``), whose ``str()`` carries an address. Never raises."""
    try:
        text = target_name_of(target)
        if not text.startswith("<"):
            return text
        module = getattr(target, "__module__", None)
        qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
        if isinstance(module, str) and isinstance(qualname, str):
            return f"{module}.{qualname}"
        return text
    except Exception:
        return repr(type(target))


def unreviewed_targets(registry: Any = None) -> tuple[str, ...]:
    """The live converter registry's targets the review does not cover, sorted (empty on Torch-TensorRT 2.14).

    Imports torch_tensorrt (through :func:`trtcap_guards.import_torch_tensorrt`) unless ``registry`` is given.
    """
    live = {review_name(t) for table in registry_dicts(registry) for t in table}
    return tuple(sorted(live - set(REVIEW)))


def describe_unreviewed() -> str | None:
    """One line for the plugin's report when the registry is loaded and has unreviewed targets, else None.

    Never imports torch_tensorrt: until the suite imports it there is no live registry to review.
    """
    registry = loaded_converter_registry()
    if registry is None:  # not imported, or its import failed half-way
        return None
    try:
        missing = unreviewed_targets(registry)
    except Exception as exc:  # a registry of unknown shape must not break a report header
        return f"registry review: could not read the converter registry ({type(exc).__name__}: {exc})"
    if not missing:
        return None
    shown = ", ".join(missing[:5]) + (f", ... ({len(missing) - 5} more)" if len(missing) > 5 else "")
    return (f"registry review: {len(missing)} converter target(s) not reviewed against the rules "
            f"(reviewed: Torch-TensorRT {TORCH_TENSORRT_VERSION}): {shown}")


def _naming_rules(name: str, rules: tuple[Rule, ...]) -> list[str]:
    return [r.name for r in rules if ALL_TARGETS not in r.targets and name in r.targets]


def review_problems(review: dict[str, str] = REVIEW, rules: tuple[Rule, ...] = RULES) -> list[str]:
    """Where the review and the rules table disagree: a verdict naming a rule that does not name the target, or
    "carries none" for a target a rule names. Empty when they agree."""
    known = {r.name for r in rules}
    problems = []
    for name, verdict in review.items():
        naming = _naming_rules(name, rules)
        if verdict == NONE:
            if naming:
                problems.append(f"{name}: reviewed as carrying none, but rule {', '.join(naming)} names it")
        elif verdict not in known:
            problems.append(f"{name}: verdict {verdict!r} is neither a rule name nor {NONE!r}")
        elif verdict not in naming:
            problems.append(f"{name}: reviewed as guarded by {verdict}, which does not name it")
    return problems
