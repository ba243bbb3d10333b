"""Resolve each setting as command line > environment variable > ini file > hook > default, keeping its source,
and declare what they name for the session.

The source is printed in the report header, and a bad value is a usage error that names where it came from.
Loaded only in sessions that give a setting (or implement the targets hook): the options themselves are declared
in ``options``. Nothing here imports torch or torch_tensorrt, except an xdist controller given targets to
neutralize (see ``check_neutralized_in_xdist_controller``).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import pytest

import trtcap_guards as guards

from .options import SPECS, Spec, given
from .session_state import Setting, Settings

if TYPE_CHECKING:
    from .session_state import TrtcapState

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


def _targets(raw: str, name: str, spec: Spec) -> tuple[tuple[int, int], ...]:  # noqa: ARG001 - PARSERS' signature
    return guards.parse_targets(raw, name, warn=False)  # warned once resolved: report_unsupported


def _target_names(raw: Any, name: str, spec: Spec) -> tuple[str, ...]:  # noqa: ARG001 - PARSERS' signature
    items = raw if isinstance(raw, (list, tuple)) else str(raw).replace("\n", ",").split(",")
    out = []
    for item in items:
        for part in str(item).split(","):
            if part.strip():
                out.append(guards.parse_target_name(part.strip(), name))
    return tuple(dict.fromkeys(out))


#: ``Spec.parse`` -> (raw value, source name, spec) -> value; ValueError on bad input.
PARSERS: dict[str, Callable[[Any, str, Spec], Any]] = {
    "targets": _targets,
    "target names": _target_names,
    "bool": lambda raw, name, spec: parse_bool(raw, name),  # noqa: ARG005 - PARSERS' signature
    "choice": _choice,
}


#: (setting, source, text) -> the value read from it, per session.
_READ = pytest.StashKey[dict[tuple[str, str, str], Any]]()


def _read(config: pytest.Config, spec: Spec, raw: Any, source: str) -> Any:
    """``raw`` read once per session where it enters: a setting resolved before conftests load (the import hook
    answers with the targets) and again at configure reads the same text once. ValueError on bad input."""
    if not isinstance(raw, str):  # a list (an append option, an ini line list): read where given
        return PARSERS[spec.parse](raw, source, spec)
    read = config.stash.setdefault(_READ, {})
    key = (spec.dest, source, raw)
    if key not in read:
        read[key] = PARSERS[spec.parse](raw, source, spec)
    return read[key]


def _resolve(config: pytest.Config, spec: Spec, hook_value: Callable[[], Any], early: bool = False) -> Setting:
    for raw, source in given(config, spec, early):
        if spec.kind == "flag" and raw is True:
            return Setting(True, source)
        try:
            return Setting(_read(config, spec, raw, source), source)
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
    from trtcap_guards.tooling import unsupported_message

    message = unsupported_message(setting.value, setting.source)
    if message is None:
        return
    try:
        _issue_at(config, guards.UnsupportedTargetWarning(message), *_where(config, setting.source))
    except Warning as exc:
        raise pytest.UsageError(
            f"trtcap: {message} ({type(exc).__name__} is an error under the warnings filter)"
        ) from None


def _where(config: pytest.Config, source: str) -> tuple[str, int]:
    """Where the user wrote the setting named ``source``: the ini file and the key's line, else the option or the
    variable with its value (what pytest's warnings summary shows as the warning's location)."""
    spec = next((s for s in SPECS if source in (s.option, s.env, f"ini {s.ini}")), None)
    if spec is None:
        return source, 1
    if source == spec.option:
        return f"{spec.option} {config.getoption(f'trtcap_{spec.dest}')}", 1
    if source == spec.env:
        import os

        return f"{spec.env}={os.environ.get(spec.env, '')}", 1
    path = config.inipath
    if path is None:
        return source, 1
    import re

    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    key = re.compile(rf"\s*{re.escape(spec.ini)}\s*[=:]")
    return str(path), next((n for n, line in enumerate(lines, 1) if key.match(line)), 1)


def _issue_at(config: pytest.Config, warning: Warning, filename: str, lineno: int) -> None:
    """``config.issue_config_time_warning`` (pytest's filters decide, its summary reports it), issued from a frame
    compiled under ``filename`` at ``lineno``: pytest and the warnings module attribute a warning to its caller's
    frame, and that frame is where the user wrote the setting, not a line of this module."""
    code = compile("\n" * (lineno - 1) + "issue(warning, 2)", filename, "exec")
    exec(code, {"__name__": "trtcap", "issue": config.issue_config_time_warning, "warning": warning})


def _target_hook(config: pytest.Config) -> Setting | None:
    caller = config.hook.pytest_trtcap_target_capabilities
    if not caller.get_hookimpls():  # nothing implements it (most projects): nothing to load or call
        return None
    from .hook_results import first_result, shown

    found = first_result(caller, config=config)
    if found is None:
        return None
    source = "hook pytest_trtcap_target_capabilities"
    from trtcap_guards.tooling import coerce_targets

    try:
        return Setting(coerce_targets(found.value, source, warn=False), source)
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
        neutralize_targets(exit, resolved.neutralize.value, resolved.neutralize.source)
    if resolved.builder_targets.source != "default":
        exit.callback(guards.enable_builder_targets(resolved.builder_targets.value,
                                                    origin=resolved.builder_targets.source).undo)
    if resolved.audit.value or resolved.audit_layers.value:
        from . import audit

        state.audit = audit.start(state.config, resolved.strict.value, bool(resolved.audit.value),
                                  bool(resolved.audit_layers.value))
        exit.callback(state.audit.deactivate)


# --- --trtcap-neutralize: only targets the installed Torch-TensorRT registers -------------------------------------
# The guards are switched off only for targets the installed Torch-TensorRT really registers.
# A typo (``ATEN.LINEAR.DEFAULT``, ``aten.linaer.default``) would otherwise neutralize nothing while the summary
# claimed it had. The converter registry is the list of real targets; it is read where the suite has imported
# Torch-TensorRT: at configure when a conftest already did, else once collection is done (before the first test).
# Nothing here imports it, except in an xdist controller given names to neutralize: only its workers collect, and a
# worker cannot stop the session cleanly, so the controller imports Torch-TensorRT (as the workers will) to read
# the registry before it starts them. Where no test ever imports it, only the names' case is checked (against the
# rules).


def registered_targets() -> dict[str, str] | None:
    """Lower-cased name -> name of every converter target; None while the registry is not imported."""
    from trtcap_guards.tooling import loaded_converter_registry

    registry = loaded_converter_registry()
    if registry is None:
        return None
    from trtcap_guards.tooling import registry_dicts, target_name_of

    names = {target_name_of(t) for table in registry_dicts(registry) for t in table}
    return {name.lower(): name for name in names}


def _check_targets(names: Iterable[str], source: str, known: dict[str, str], what: str) -> None:
    """UsageError naming the first name not in ``known`` and the nearest ones that are."""
    for name in names:
        if name in known.values():
            continue
        nearest = [known[n] for n in difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.6)]
        raise pytest.UsageError(
            f"trtcap: {source}: {name!r} is not a converter target {what}; "
            f"nearest: {', '.join(nearest) or 'none close'}"
        )


def _case_slips(names: Iterable[str], source: str) -> None:
    """Before the registry can be read: a rule's target in other letter case is surely a slip."""
    rules = {name.lower(): name for name in guards.explicit_targets()}
    slips = [name for name in names if name.lower() in rules and name not in rules.values()]
    _check_targets(slips, source, rules, "(converter targets are lower case)")


def neutralize_targets(stack: ExitStack, names: Iterable[str], source: str) -> None:
    """Neutralize each name for the session (undone by ``stack``); UsageError naming an unknown one first."""
    names = tuple(names)
    known = registered_targets()
    if known is not None:
        _check_targets(names, source, known, "of the installed Torch-TensorRT")
    else:
        _case_slips(names, source)
    for name in names:
        try:
            stack.enter_context(guards.neutralize(name))
        except ValueError as exc:
            raise pytest.UsageError(f"trtcap: {source}: {exc}") from None


def check_neutralized_after_collection(names: Iterable[str], source: str) -> None:
    """Before the first test: the suite may have imported Torch-TensorRT while collecting."""
    known = registered_targets()
    if known is not None:
        _check_targets(names, source, known, "of the installed Torch-TensorRT")


def check_neutralized_in_xdist_controller(names: Iterable[str], source: str) -> None:
    """Before the workers start: read the registry here, importing Torch-TensorRT as the suite will."""
    if registered_targets() is None:
        try:  # through the plugin's import hook, so --trtcap-gpu-less-import is respected here too
            importlib.import_module("torch_tensorrt")
        except Exception:  # not importable here (no GPU and the GPU-less import off, say): the workers will tell
            return
    check_neutralized_after_collection(names, source)
