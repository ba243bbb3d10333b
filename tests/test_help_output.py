"""What the plugin declares (``pytest_trtcap.options``), as ``pytest --help`` shows it: every setting's option,
with its environment variable and ini key named in its help, and every ini key in pytest's list of them."""

from __future__ import annotations

import re

import pytest

#: The public names of each setting (option, environment variable, ini key), as the README documents them.
SETTINGS = (
    ("--trt-target-sm", "TRTCAP_TARGET_SM", "trt_target_sm"),
    ("--trt-backend", "TRTCAP_BACKEND", "trt_backend"),
    ("--trtcap-guards", "TRTCAP_GUARDS", "trtcap_guards"),
    ("--trtcap-neutralize", "TRTCAP_NEUTRALIZE", "trtcap_neutralize"),
    ("--trtcap-strict", "TRTCAP_STRICT", "trtcap_strict"),
    ("--trtcap-gpu-less-import", "TRTCAP_GPU_LESS_IMPORT", "trtcap_gpu_less_import"),
    ("--trtcap-builder-targets", "TRTCAP_BUILDER_TARGETS", "trtcap_builder_targets"),
    ("--trtcap-audit", "TRTCAP_AUDIT", "trtcap_audit"),
    ("--trtcap-audit-layers", "TRTCAP_AUDIT_LAYERS", "trtcap_audit_layers"),
    ("--trtcap-needs-gpu", "TRTCAP_NEEDS_GPU", "trtcap_needs_gpu"),
)
GROUP = "capability guards for Torch-TensorRT on TensorRT-RTX:"


def _group(text: str) -> str:
    """The plugin's option group of the help text: from its title to the next blank line."""
    return text.split(GROUP, 1)[1].split("\n\n", 1)[0]


def test_options_are_documented_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "capability guards for Torch-TensorRT on TensorRT-RTX:",
        "*--trt-target-sm=LIST*",
        "*--trt-backend={auto,rtx,standard}*",
        "*--trtcap-guards={on,off}*",
        "*--trtcap-neutralize=TARGET*",
        "*--trtcap-strict*",
        "*--trtcap-gpu-less-import={auto,off}*",
    ])
    for ini in ("trt_target_sm", "trt_backend", "trtcap_guards", "trtcap_neutralize", "trtcap_strict",
                "trtcap_gpu_less_import"):
        result.stdout.fnmatch_lines([f"  {ini} (*):*"])


def test_every_option_s_help_names_its_environment_variable_and_ini_key(pytester: pytest.Pytester) -> None:
    text = pytester.runpytest("--help").stdout.str()
    group = _group(text)
    assert re.findall(r"^  (--[\w-]+)", group, re.MULTILINE) == [option for option, _, _ in SETTINGS]
    flat = " ".join(group.split())  # help is wrapped to the terminal's width
    for option, env, ini in SETTINGS:
        assert re.search(rf"{re.escape(option)}\b[^\[]*\[env {env}, ini {ini}\]", flat), (option, flat)
    for _, _, ini in SETTINGS:  # pytest's own list of ini keys
        assert re.search(rf"^  {ini} \((string|linelist)\):", text, re.MULTILINE), ini
