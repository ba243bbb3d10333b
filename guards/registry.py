"""Compose the rules' guards with the stock validators of the live Torch-TensorRT converter registry.

The registry picks the first candidate whose validator passes, so a new rejecting entry would not block
the stock ones behind it: every existing entry of a guarded target is replaced (``dataclasses.replace``)
by one whose validator is ``guard AND stock``. Uninstalling puts the identical original objects back.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .builder import install_builder_targets, uninstall_builder_targets
from .capabilities import shown
from .live_registry import converter_registry, loaded_converter_registry
from .process_state import STATE, changing
from .rules import ALL_TARGETS, RULES, Rule, explicit_targets, rules_for, target_name_of
from .validators import rejecting_rule

_LOG = logging.getLogger("trtcap_guards")
_ORIGINAL = "_trtcap_original"  # attribute on a guarded validator: the ConverterSupport it replaced

_TARGET_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*){1,2}$")


def registry_dicts(registry: Any = None) -> list[dict[Any, Any]]:
    """Every dict registry of ``DYNAMO_CONVERTERS`` (target -> list of ConverterSupport)."""
    registry = registry if registry is not None else converter_registry()
    return [r for r in getattr(registry, "registries", ()) if isinstance(r, dict)]


def _references_upstream_guard(fn: Any, depth: int = 0) -> bool:
    """Whether a stock validator already consults Torch-TensorRT's own Turing predicate."""
    code = getattr(fn, "__code__", None)
    if code is None or depth > 3:
        return False
    stack = [code]
    while stack:
        c = stack.pop()
        if "trt_rtx_targets_turing" in c.co_names:
            return True
        stack.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            inner = cell.cell_contents
        except ValueError:
            continue
        if callable(inner) and _references_upstream_guard(inner, depth + 1):
            return True
    return False


def _guard(stock_support: Any, rules: tuple[Rule, ...], name: str) -> Any:
    stock = stock_support.capability_validator

    def guarded_validator(node: Any, settings: Any = None) -> bool:
        if name not in STATE.neutralized:
            rule = rejecting_rule(node, settings, rules, name)
            if rule is not None:
                STATE.fired[(rule.name, name)] += 1
                _LOG.debug("guards: %s rejected %s (%s)", rule.name, getattr(node, "name", node), rule.why)
                return False
        return stock(node, settings)

    guarded_validator.__wrapped__ = stock  # type: ignore[attr-defined]
    setattr(guarded_validator, _ORIGINAL, stock_support)
    guarded_validator.rules = rules  # type: ignore[attr-defined]
    return dataclasses.replace(stock_support, capability_validator=guarded_validator)


def _is_guarded(support: Any) -> bool:
    return hasattr(getattr(support, "capability_validator", None), _ORIGINAL)


def _stock(support: Any) -> Any:
    """The stock ConverterSupport behind ``support`` (itself when unguarded)."""
    return getattr(support.capability_validator, _ORIGINAL) if _is_guarded(support) else support


def _guarding(support: Any, applicable: tuple[Rule, ...]) -> Any:
    """The rules ``support`` should be guarded by after this install, or None where it already is (or needs none).

    An entry guarded by an earlier ``install(rules)`` keeps its rules and gains the missing ones: installing adds
    guards, never drops one, and never wraps a guard in another.
    """
    mine = applicable
    if _references_upstream_guard(_stock(support).capability_validator):
        mine = tuple(r for r in applicable if ALL_TARGETS in r.targets)
    have = support.capability_validator.rules if _is_guarded(support) else ()
    wanted = have + tuple(r for r in mine if r not in have)
    return wanted if wanted != have else None


def install(rules: tuple[Rule, ...] = RULES) -> tuple[str, ...]:
    """Guard every registered target the rules name, and declare the targets on the builder
    (``builder.install_builder_targets``). Idempotent; returns the guarded target names."""
    guarded: list[str] = []
    for table in registry_dicts():
        for target, entries in table.items():
            if not isinstance(entries, list):
                continue
            name = target_name_of(target)
            applicable = rules_for(name, rules)
            if not applicable:
                continue
            for i, support in enumerate(entries):
                guarding = _guarding(support, applicable)
                if guarding is not None:
                    entries[i] = _guard(_stock(support), guarding, name)
            guarded.append(name)
    install_builder_targets()
    return tuple(guarded)


def uninstall() -> int:
    """Put back the identical original ConverterSupport objects; returns how many were restored.

    Imports nothing: where torch_tensorrt's registry was never imported no guard can be installed, and importing
    it here would cost seconds and, on a host without CUDA, answer its device queries as a side effect.
    """
    uninstall_builder_targets()
    registry = loaded_converter_registry()
    if registry is None:
        return 0
    restored = 0
    for table in registry_dicts(registry):
        for entries in table.values():
            if not isinstance(entries, list):
                continue
            for i, support in enumerate(entries):
                if _is_guarded(support):
                    entries[i] = getattr(support.capability_validator, _ORIGINAL)
                    restored += 1
    return restored


def is_installed() -> bool:
    """Whether any guard sits in the live registry (read from the registry, never a stale flag)."""
    registry = loaded_converter_registry()
    if registry is None:
        return False
    return any(_is_guarded(s) for t in registry_dicts(registry) for e in t.values() if isinstance(e, list) for s in e)


def upstream_guarded_targets() -> tuple[str, ...]:
    """Targets whose stock validator already consults Torch-TensorRT's own Turing predicate."""
    out = []
    for table in registry_dicts():
        for target, entries in table.items():
            for support in entries if isinstance(entries, list) else ():
                stock = (getattr(support.capability_validator, _ORIGINAL, None) or support).capability_validator
                if _references_upstream_guard(stock):
                    out.append(target_name_of(target))
                    break
    return tuple(out)


@contextmanager
def installed(rules: tuple[Rule, ...] = RULES) -> Iterator[tuple[str, ...]]:
    """Guards installed for the block; left as found afterwards."""
    was = is_installed()
    names = install(rules)
    try:
        yield names
    finally:
        if not was:
            uninstall()


def parse_target_name(target: Any, name: str = "target") -> str:
    """``aten.linear.default`` (or an OpOverload) -> its name; anything else is a ValueError naming it."""
    text = target_name_of(target).strip() if target is not None else ""
    if not _TARGET_NAME.match(text):
        raise ValueError(
            f"{name}: {shown(target)} is not an operator name; expected e.g. aten.linear.default "
            f"(rules name: {', '.join(explicit_targets())})"
        )
    return text


class neutralize:
    """Switch the guard for one target off inside the block (attribution experiments)."""

    def __init__(self, target: Any) -> None:
        self.target = parse_target_name(target, "neutralize")
        registry = loaded_converter_registry()
        if registry is not None and self.target not in explicit_targets():
            known = {target_name_of(t) for table in registry_dicts(registry) for t in table}
            if self.target not in known:
                raise ValueError(f"neutralize: {self.target!r} is not a registered converter target")

    def __enter__(self) -> str:
        changing()
        STATE.neutralized[self.target] += 1
        return self.target

    def __exit__(self, *exc: object) -> None:
        STATE.neutralized[self.target] -= 1
        if STATE.neutralized[self.target] <= 0:
            del STATE.neutralized[self.target]
