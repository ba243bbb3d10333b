"""What the plugin declares: its settings (option, environment variable and ini key of each, and whether any was
given) and its markers' names.

Only declarations here, no parsing: this module loads in every pytest run of an environment, and most runs give
none of these. ``settings`` reads and checks the values, and loads only where one was given; ``markers`` holds the
markers' help and meaning, generated from the guards' rules table.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import pytest

from trtcap_guards.tooling import BACKENDS, ENV_BACKEND, ENV_TARGETS, MARKERS

NO_ISOLATION = "trtcap_no_isolation"

#: Every marker of the plugin: the capability markers (named by the rules table), then ``trtcap_no_isolation``.
MARKER_NAMES = (*MARKERS, NO_ISOLATION)


class Spec:
    """One setting's declaration. A plain class, not a NamedTuple: creating one of those costs more than the rest
    of this module, and it loads in every pytest run."""

    __slots__ = ("dest", "option", "env", "ini", "help", "parse", "default", "kind", "metavar", "choices")

    def __init__(self, dest: str, option: str, env: str, ini: str, help: str, parse: str, default: Any = None,
                 kind: str = "value", metavar: str | None = None, choices: tuple[str, ...] = ()) -> None:
        self.dest = dest  # attribute on Settings
        self.option = option  # command-line flag
        self.env, self.ini, self.help = env, ini, help
        self.parse = parse  # the reading in settings.PARSERS: "targets", "target names", "bool" or "choice"
        self.default = default
        self.kind = kind  # "value", "flag" or "append"
        self.metavar = metavar
        self.choices = choices  # for "choice"

    def __repr__(self) -> str:
        return f"Spec({self.dest!r}, {self.option!r})"


SPECS: tuple[Spec, ...] = (
    Spec("target_sm", "--trt-target-sm", ENV_TARGETS, "trt_target_sm",
         "compute capabilities the build targets, e.g. 7.5 or 7.5,8.9 (simulates them on any host)",
         "targets", metavar="LIST"),
    Spec("backend", "--trt-backend", ENV_BACKEND, "trt_backend",
         "TensorRT backend to assume: auto (detect), rtx or standard", "choice",
         default="auto", metavar="{auto,rtx,standard}", choices=BACKENDS),
    Spec("guards", "--trtcap-guards", "TRTCAP_GUARDS", "trtcap_guards",
         "install the capability guards when torch_tensorrt is imported (on/off)", "bool",
         default=True, metavar="{on,off}"),
    Spec("neutralize", "--trtcap-neutralize", "TRTCAP_NEUTRALIZE", "trtcap_neutralize",
         "switch one target's guard off, e.g. aten.linear.default (repeatable)", "target names",
         default=(), kind="append", metavar="TARGET"),
    Spec("strict", "--trtcap-strict", "TRTCAP_STRICT", "trtcap_strict",
         "a test that leaks global state errors in teardown instead of warning", "bool",
         default=False, kind="flag"),
    Spec("gpu_less_import", "--trtcap-gpu-less-import", "TRTCAP_GPU_LESS_IMPORT", "trtcap_gpu_less_import",
         "answer torch_tensorrt's import-time device queries on a host without a CUDA device (auto/off)",
         "choice", default="auto", metavar="{auto,off}", choices=("auto", "off")),
    Spec("builder_targets", "--trtcap-builder-targets", "TRTCAP_BUILDER_TARGETS", "trtcap_builder_targets",
         "declare the targets on the TensorRT-RTX builder config when the guards are installed (on/off)", "bool",
         default=True, metavar="{on,off}"),
    Spec("audit", "--trtcap-audit", "TRTCAP_AUDIT", "trtcap_audit",
         "audit every partition Torch-TensorRT produces: report nodes placed on TensorRT that the declared targets "
         "cannot serve, per test (an error under --trtcap-strict)", "bool", default=False, kind="flag"),
    Spec("audit_layers", "--trtcap-audit-layers", "TRTCAP_AUDIT_LAYERS", "trtcap_audit_layers",
         "audit the layers of every TensorRT network built during the run, and of every engine where a CUDA device "
         "builds one: report layers the declared targets cannot serve, per test (an error under --trtcap-strict)",
         "bool", default=False, kind="flag"),
    Spec("needs_gpu", "--trtcap-needs-gpu", "TRTCAP_NEEDS_GPU", "trtcap_needs_gpu",
         "a test that fails for want of a CUDA device, on a host without one: fail (default) or skip it",
         "choice", default="fail", metavar="{fail,skip}", choices=("fail", "skip")),
)


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
        ini_type: Literal["linelist", "string"] = "linelist" if spec.kind == "append" else "string"
        parser.addini(spec.ini, help=spec.help, type=ini_type, default=[] if spec.kind == "append" else "")


def given(config: pytest.Config, spec: Spec, early: bool = False) -> list[tuple[Any, str]]:
    """The raw values given for ``spec``, each with its source, highest precedence first (command line,
    environment, ini file)."""
    out = []
    if early:  # before pytest_configure: only the known arguments are parsed
        cli = getattr(config.known_args_namespace, f"trtcap_{spec.dest}", None)
    else:
        cli = config.getoption(f"trtcap_{spec.dest}")
    if cli is not None:
        out.append((cli, spec.option))
    env = os.environ.get(spec.env)
    if env is not None:
        out.append((env, spec.env))
    ini = config.getini(spec.ini)
    if ini not in ("", [], None):
        out.append((ini, f"ini {spec.ini}"))
    return out


def anything_given(config: pytest.Config) -> bool:
    """Whether any setting has a value from the command line, the environment or the ini file."""
    return any(given(config, spec) for spec in SPECS)
