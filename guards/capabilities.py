"""Compute capabilities and backends read from text and ``(major, minor)`` pairs, and the warning for a
capability TensorRT-RTX does not build for. One reading for every source: settings, declarations, the
environment, the plugin's hook.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import Any

from .environment import BACKENDS, ENV_BACKEND, ENV_TARGETS, TURING, Capability, format_capability  # noqa: F401 - TURING re-exported
from .process_state import STATE

#: Compute capabilities TensorRT-RTX builds engines for (``tensorrt_rtx.ComputeCapability``).
RTX_SUPPORTED: tuple[Capability, ...] = ((7, 5), (8, 0), (8, 6), (8, 9), (12, 0), (12, 1))

_DOTTED = re.compile(r"^(\d{1,2})\.(\d)$", re.ASCII)  # other scripts' digits are no capability
_COMPACT = re.compile(r"^(?:sm_?)?(\d{1,2})(\d)$", re.IGNORECASE | re.ASCII)


class UnsupportedTargetWarning(UserWarning):
    """A declared capability that TensorRT-RTX does not build engines for."""


def shown(value: Any, limit: int = 200) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters (a variable or a hook's value can hold
    anything); a value whose repr raises must not replace the error with its own."""
    try:
        text = repr(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def format_targets(targets: Sequence[Capability]) -> str:
    """``7.5,8.9`` for ``((7, 5), (8, 9))``, ``none`` for none: text ``parse_targets`` reads back."""
    if isinstance(targets, (str, bytes)) or not isinstance(targets, Iterable):
        raise ValueError(f"format_targets: expected (major, minor) pairs such as [(7, 5)], got {shown(targets)}")
    return ",".join(format_capability(check_pair(c, "format_targets")) for c in targets) or "none"


def _parse_one(item: str, name: str, text: str) -> Capability:
    m = _DOTTED.match(item)
    if m is None and not item.count("."):
        m = _COMPACT.match(item)
    if m is None:
        raise ValueError(
            f"{name}: invalid compute capability {shown(item)} in {shown(text)}; "
            "expected forms like 7.5, 75, sm_75 or SM75, comma-separated"
        )
    return (int(m.group(1)), int(m.group(2)))


class _Read(tuple):
    """Capabilities read and checked here (what ``parse_targets`` and ``coerce_targets`` return), a tuple of pairs
    like any other: a value read where it enters (an option, a hook's answer) is passed on as it is and never read
    again (``declare_targets`` takes it as given)."""

    __slots__ = ()


def _parse_text(text: str, name: str) -> tuple[Capability, ...]:
    items = [part.strip() for part in text.split(",")]
    if any(not item for item in items):
        raise ValueError(f"{name}: empty compute capability in {shown(text)}")
    return _Read(dict.fromkeys(_parse_one(item, name, text) for item in items))


def int_pair(value: Any, maxima: tuple[int | None, int | None] = (None, None)) -> tuple[int, int] | None:
    """``value`` as two non-negative ints (bools are not counts) within ``maxima``, or None.

    The one check behind compute-capability pairs here and ``(acc, gpu)`` partition counts in the plugin.
    """
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return None
    if any(limit is not None and v > limit for v, limit in zip(value, maxima)):
        return None
    return (int(value[0]), int(value[1]))


def check_pair(value: Any, name: str) -> Capability:
    """``(7, 5)`` -> (7, 5); the same range the text forms allow (major 0-99, minor 0-9), else a ValueError."""
    pair = int_pair(value, (99, 9))
    if pair is not None:
        return pair
    raise ValueError(
        f"{name}: invalid compute capability {shown(value)}; expected a (major, minor) pair such as (7, 5) "
        "(major 0-99, minor 0-9) or a string such as '7.5'"
    )


def unsupported_message(caps: Sequence[Capability], name: str) -> str | None:
    """The ``UnsupportedTargetWarning`` text for the capabilities TensorRT-RTX does not build for, or None."""
    unsupported = [c for c in caps if c not in RTX_SUPPORTED]
    if not unsupported:
        return None
    return (
        f"{name}: TensorRT-RTX does not build for {format_targets(unsupported)}; "
        f"it supports {format_targets(RTX_SUPPORTED)}; {format_targets(unsupported)} is never passed to the "
        "TensorRT-RTX builder (no ComputeCapability for it)"
    )


def _warn_unsupported(caps: Sequence[Capability], name: str, stacklevel: int) -> None:
    """Warn every time the warnings filters say so (no once-per-process memory of our own)."""
    message = unsupported_message(caps, name)
    if message is not None:
        warnings.warn(message, UnsupportedTargetWarning, stacklevel=stacklevel + 1)


def parse_targets(text: str, name: str = ENV_TARGETS, *, warn: bool = True) -> tuple[Capability, ...]:
    """Parse ``7.5``, ``75``, ``sm_75``, ``SM75`` or a comma list; errors name ``name`` and the value.

    Spaces around an item are ignored; inside one (``7 .5``, ``sm 75``) they are an error. A capability
    TensorRT-RTX does not build for is an ``UnsupportedTargetWarning`` (unless ``warn`` is False).
    """
    if not isinstance(text, str):
        raise ValueError(f"{name}: expected a string of compute capabilities, got {shown(text)}")
    caps = _parse_text(text, name)
    if name == ENV_TARGETS:
        STATE.env_targets[text] = caps
    if warn:
        _warn_unsupported(caps, name, stacklevel=2)
    return caps


def coerce_targets(targets: Any, name: str, *, warn: bool = True) -> tuple[Capability, ...]:
    """A string (``parse_targets``) or an iterable of strings and ``(major, minor)`` pairs; ValueError naming
    ``name`` and the value otherwise. Warns about unsupported capabilities like ``parse_targets``. What this module
    read already is taken as it is."""
    if isinstance(targets, _Read):
        caps: tuple[Capability, ...] = targets
    elif isinstance(targets, str):
        caps = _parse_text(targets, name)
    else:
        if isinstance(targets, (bytes, bytearray, dict)) or not isinstance(targets, Iterable):
            raise ValueError(
                f"{name}: expected a string like '7.5,8.9' or (major, minor) pairs such as [(7, 5)], "
                f"got {shown(targets)}"
            )
        found: list = []
        for t in targets:
            found.extend(_parse_text(t, name) if isinstance(t, str) else [check_pair(t, name)])
        caps = _Read(dict.fromkeys(found))
        if not caps:  # as the empty text: declaring nothing would outrank the environment and the host
            raise ValueError(f"{name}: no compute capability in {shown(targets)} (give at least one, or None for none)")
    if warn:
        _warn_unsupported(caps, name, stacklevel=3)
    return caps


def parse_backend(text: str, name: str = ENV_BACKEND) -> str:
    value = text.strip().lower() if isinstance(text, str) else text
    if not isinstance(value, str) or value not in BACKENDS:
        raise ValueError(f"{name}: invalid backend {shown(text)}; choose one of {', '.join(BACKENDS)}")
    return value


def read_env_targets(text: str) -> tuple[Capability, ...]:
    """``TRTCAP_TARGET_SM`` as the predicate reads it on every cache miss: each value is read once
    (``STATE.env_targets``), and an unsupported target reported when first read; a warnings filter that makes the
    warning an error cannot make the predicate (and so a validator) raise."""
    caps = STATE.env_targets.get(text)
    if caps is None:
        caps = parse_targets(text, ENV_TARGETS, warn=False)
        try:
            _warn_unsupported(caps, ENV_TARGETS, stacklevel=1)
        except UnsupportedTargetWarning:
            pass
    return caps
