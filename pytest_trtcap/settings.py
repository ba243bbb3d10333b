"""Resolve each setting as command line > environment variable > ini file > hook > default, keeping its source,
and declare what they name for the session.

The source is printed in the report header, and a bad value is a usage error that names where it came from.
Loaded only in sessions that give a setting (or implement the targets hook): the options themselves are declared
in ``options``. Nothing here imports torch or torch_tensorrt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

import pytest

import trtcap_guards as guards

from .options import SPECS, Spec, given
from .state import Setting, Settings

if TYPE_CHECKING:
    from .state import TrtcapState

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_bool(raw: Any, name: str) -> bool:
    """Strict booleans: a string "0" is false, "banana" is an error."""
    if isinstance(raw, bool):
        return raw
    value = str(raw).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"{name}: invalid boolean {raw!r}; use one of {', '.join(_TRUE + _FALSE)}")


def _choice(raw: Any, name: str, spec: Spec) -> str:
    value = str(raw).strip().lower()
    if value not in spec.choices:
        raise ValueError(f"{name}: invalid value {raw!r}; choose one of {', '.join(spec.choices)}")
    return value


def _targets(raw: str, name: str, spec: Spec) -> Tuple[Tuple[int, int], ...]:  # noqa: ARG001 - PARSERS' signature
    return guards.parse_targets(raw, name, warn=False)  # warned once resolved: report_unsupported


def _target_names(raw: Any, name: str, spec: Spec) -> Tuple[str, ...]:  # noqa: ARG001 - PARSERS' signature
    items = raw if isinstance(raw, (list, tuple)) else str(raw).replace("\n", ",").split(",")
    out = []
    for item in items:
        for part in str(item).split(","):
            if part.strip():
                out.append(guards.parse_target_name(part.strip(), name))
    return tuple(dict.fromkeys(out))


#: ``Spec.parse`` -> (raw value, source name, spec) -> value; ValueError on bad input.
PARSERS: Dict[str, Callable[[Any, str, Spec], Any]] = {
    "targets": _targets,
    "target names": _target_names,
    "bool": lambda raw, name, spec: parse_bool(raw, name),  # noqa: ARG005 - PARSERS' signature
    "choice": _choice,
}


def _resolve(config: pytest.Config, spec: Spec, hook_value: Callable[[], Any], early: bool = False) -> Setting:
    for raw, source in given(config, spec, early):
        if spec.kind == "flag" and raw is True:
            return Setting(True, source)
        try:
            return Setting(PARSERS[spec.parse](raw, source, spec), source)
        except ValueError as exc:
            message = str(exc)
            if not message.startswith(source):
                message = f"{source}: {message}"
            raise pytest.UsageError(f"trtcap: {message}") from None
    value = hook_value()
    if value is not None:
        return value
    return Setting(spec.default, "default")


def report_unsupported(config: pytest.Config, setting: Setting) -> None:
    """Warn about targets TensorRT-RTX does not build for, as a config-time warning pytest records; where the
    warnings filters make it an error (``-W error``, ``filterwarnings = error``), a usage error naming the source."""
    if not setting.value:
        return
    message = guards.capabilities.unsupported_message(setting.value, setting.source)
    if message is None:
        return
    try:
        config.issue_config_time_warning(guards.UnsupportedTargetWarning(message), stacklevel=3)
    except Warning as exc:
        raise pytest.UsageError(
            f"trtcap: {message} ({type(exc).__name__} is an error under the warnings filter)"
        ) from None


def _target_hook(config: pytest.Config) -> Optional[Setting]:
    caller = config.hook.pytest_trtcap_target_capabilities
    if not caller.get_hookimpls():  # nothing implements it (most projects): nothing to load or call
        return None
    from .hook_results import first_result, shown

    found = first_result(caller, config=config)
    if found is None:
        return None
    source = "hook pytest_trtcap_target_capabilities"
    try:
        return Setting(guards.capabilities.coerce_targets(found.value, source, warn=False), source)
    except Exception as exc:  # ValueError, or a value that fails while iterated or shown: name it all the same
        detail = (str(exc) if isinstance(exc, ValueError)
                  else f"{source}: cannot read {shown(found.value)} ({shown(exc)})")
        raise pytest.UsageError(f"trtcap: {detail} (returned by {found.where})") from None


def resolve(config: pytest.Config) -> Settings:
    """All settings; raises ``pytest.UsageError`` naming the option, variable or ini key and the bad value."""
    out = Settings()
    for spec in SPECS:
        hook = (lambda: _target_hook(config)) if spec.dest == "target_sm" else (lambda: None)
        setattr(out, spec.dest, _resolve(config, spec, hook))
    report_unsupported(config, out.target_sm)
    return out


def resolve_early(config: pytest.Config, dest: str) -> Setting:
    """One setting while conftests are still loading (``pytest_load_initial_conftests``)."""
    spec = next(s for s in SPECS if s.dest == dest)
    return _resolve(config, spec, lambda: None, early=True)


def declare(state: TrtcapState) -> None:
    """Declare what the settings name (targets, backend, neutralized guards, builder targets, the audit) for the
    session; undone at unconfigure. A value from the guards' own environment variable is theirs already."""
    resolved, exit = state.settings, state.exit
    target = resolved.target_sm
    if target.value is not None and target.source != guards.ENV_TARGETS:
        exit.callback(guards.declare_targets(target.value, origin=target.source, warn=False).undo)
    if resolved.backend.source not in ("default", guards.ENV_BACKEND):
        exit.callback(guards.declare_backend(resolved.backend.value, origin=resolved.backend.source).undo)
    if resolved.neutralize.value:
        from . import neutralize_targets

        neutralize_targets.enter(exit, resolved.neutralize.value, resolved.neutralize.source)
    if resolved.builder_targets.source != "default":
        exit.callback(guards.enable_builder_targets(resolved.builder_targets.value,
                                                    origin=resolved.builder_targets.source).undo)
    if resolved.audit.value:
        from . import audit

        state.audit = audit.start(state.config, resolved.strict.value)
        exit.callback(state.audit.deactivate)
