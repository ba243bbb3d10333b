"""Resolve each setting as command line > environment variable > ini file > default, keeping its source.

The source is printed in the report header, and a bad value is a usage error that names where it came from.
Nothing here imports torch or torch_tensorrt.
"""

from __future__ import annotations

import os
from typing import Any, Callable, NamedTuple, Optional, Tuple

import pytest

import trtcap_guards as guards
from trtcap_guards.environment import BACKENDS, ENV_BACKEND, ENV_TARGETS

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class Setting(NamedTuple):  # NamedTuples, not dataclasses: cheaper to create in a module every pytest run loads
    """One resolved value and where it came from (``--trt-target-sm``, ``TRTCAP_TARGET_SM``,
    ``ini trt_target_sm``...)."""

    value: Any
    source: str

    def __str__(self) -> str:
        return f"{self.value} (from {self.source})"


class Spec(NamedTuple):
    dest: str  # attribute on Settings
    option: str  # command-line flag
    env: str
    ini: str
    help: str
    parse: Callable[[str, str], Any]  # (raw, source name) -> value, ValueError on bad input
    default: Any = None
    kind: str = "value"  # "value", "flag" or "append"
    metavar: Optional[str] = None


def _choice(*choices: str) -> Callable[[str, str], str]:
    def parse(raw: str, name: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"{name}: invalid value {raw!r}; choose one of {', '.join(choices)}")
        return value

    return parse


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


def _targets(raw: str, name: str) -> Tuple[Tuple[int, int], ...]:
    return guards.parse_targets(raw, name, warn=False)  # warned once resolved: report_unsupported


def _target_names(raw: Any, name: str) -> Tuple[str, ...]:
    items = raw if isinstance(raw, (list, tuple)) else str(raw).replace("\n", ",").split(",")
    out = []
    for item in items:
        for part in str(item).split(","):
            if part.strip():
                out.append(guards.parse_target_name(part.strip(), name))
    return tuple(dict.fromkeys(out))


SPECS: Tuple[Spec, ...] = (
    Spec("target_sm", "--trt-target-sm", ENV_TARGETS, "trt_target_sm",
         "compute capabilities the build targets, e.g. 7.5 or 7.5,8.9 (simulates them on any host)",
         _targets, metavar="LIST"),
    Spec("backend", "--trt-backend", ENV_BACKEND, "trt_backend",
         "TensorRT backend to assume: auto (detect), rtx or standard", _choice(*BACKENDS),
         default="auto", metavar="{auto,rtx,standard}"),
    Spec("guards", "--trtcap-guards", "TRTCAP_GUARDS", "trtcap_guards",
         "install the capability guards when torch_tensorrt is imported (on/off)",
         lambda raw, name: parse_bool(raw, name), default=True, metavar="{on,off}"),
    Spec("neutralize", "--trtcap-neutralize", "TRTCAP_NEUTRALIZE", "trtcap_neutralize",
         "switch one target's guard off, e.g. aten.linear.default (repeatable)", _target_names,
         default=(), kind="append", metavar="TARGET"),
    Spec("strict", "--trtcap-strict", "TRTCAP_STRICT", "trtcap_strict",
         "a test that leaks global state errors in teardown instead of warning",
         lambda raw, name: parse_bool(raw, name), default=False, kind="flag"),
    Spec("gpu_less_import", "--trtcap-gpu-less-import", "TRTCAP_GPU_LESS_IMPORT", "trtcap_gpu_less_import",
         "answer torch_tensorrt's import-time device queries on a host without a CUDA device (auto/off)",
         _choice("auto", "off"), default="auto", metavar="{auto,off}"),
    Spec("builder_targets", "--trtcap-builder-targets", "TRTCAP_BUILDER_TARGETS", "trtcap_builder_targets",
         "declare the targets on the TensorRT-RTX builder config when the guards are installed (on/off)",
         lambda raw, name: parse_bool(raw, name), default=True, metavar="{on,off}"),
    Spec("audit", "--trtcap-audit", "TRTCAP_AUDIT", "trtcap_audit",
         "audit every partition Torch-TensorRT produces: report nodes placed on TensorRT that the declared targets "
         "cannot serve, per test (an error under --trtcap-strict)",
         lambda raw, name: parse_bool(raw, name), default=False, kind="flag"),
    Spec("needs_gpu", "--trtcap-needs-gpu", "TRTCAP_NEEDS_GPU", "trtcap_needs_gpu",
         "a test that fails for want of a CUDA device, on a host without one: fail (default) or skip it",
         _choice("fail", "skip"), default="fail", metavar="{fail,skip}"),
)


class Settings:
    """Every setting of the session, each with its source; a plain class, not a dataclass: this module loads in
    every pytest run of the environment, and creating a dataclass costs more than the rest of the module."""

    __slots__ = tuple(spec.dest for spec in SPECS)
    target_sm: Setting
    backend: Setting
    guards: Setting
    neutralize: Setting
    strict: Setting
    gpu_less_import: Setting
    builder_targets: Setting
    audit: Setting
    needs_gpu: Setting

    def __init__(self) -> None:
        for spec in SPECS:
            setattr(self, spec.dest, Setting(spec.default, "default"))

    def __repr__(self) -> str:
        return "Settings(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__) + ")"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("trtcap", "capability guards for Torch-TensorRT on TensorRT-RTX")
    for spec in SPECS:
        help = f"{spec.help} [env {spec.env}, ini {spec.ini}]"
        if spec.kind == "flag":
            group.addoption(spec.option, action="store_true", default=None, dest=f"trtcap_{spec.dest}", help=help)
        elif spec.kind == "append":
            group.addoption(spec.option, action="append", default=None, dest=f"trtcap_{spec.dest}",
                            metavar=spec.metavar, help=help)
        else:
            group.addoption(spec.option, default=None, dest=f"trtcap_{spec.dest}", metavar=spec.metavar, help=help)
        parser.addini(spec.ini, help=spec.help, type="linelist" if spec.kind == "append" else "string",
                      default=[] if spec.kind == "append" else "")


def _resolve(config: pytest.Config, spec: Spec, hook_value: Callable[[], Any], early: bool = False) -> Setting:
    candidates = []
    if early:  # before pytest_configure: only the known arguments are parsed
        cli = getattr(config.known_args_namespace, f"trtcap_{spec.dest}", None)
    else:
        cli = config.getoption(f"trtcap_{spec.dest}")
    if cli is not None:
        candidates.append((cli, spec.option))
    env = os.environ.get(spec.env)
    if env is not None:
        candidates.append((env, spec.env))
    ini = config.getini(spec.ini)
    if ini not in ("", [], None):
        candidates.append((ini, f"ini {spec.ini}"))
    for raw, source in candidates:
        if spec.kind == "flag" and raw is True:
            return Setting(True, source)
        try:
            return Setting(spec.parse(raw, source), source)
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


def resolve(config: pytest.Config) -> Settings:
    """All settings; raises ``pytest.UsageError`` naming the option, variable or ini key and the bad value."""

    def target_hook() -> Optional[Setting]:
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

    out = Settings()
    for spec in SPECS:
        hook = target_hook if spec.dest == "target_sm" else (lambda: None)
        setattr(out, spec.dest, _resolve(config, spec, hook))
    report_unsupported(config, out.target_sm)
    return out


def resolve_early(config: pytest.Config, dest: str) -> Setting:
    """One setting while conftests are still loading (``pytest_load_initial_conftests``)."""
    spec = next(s for s in SPECS if s.dest == dest)
    return _resolve(config, spec, lambda: None, early=True)
