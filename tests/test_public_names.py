"""The census of public names the project's issues promise, each checked where a user meets it.

Names written in the issues (functions, classes, fixtures, markers, options, environment variables, ini keys, hooks,
command flags, record fields, exit statuses) are public API that outside acceptance tests call exactly as written.
Every expected name below is copied from the issue that promises it (the number beside it), never read from the
code under test. The checks are the cheap, user-visible ones: importable from the promised module and listed in its
``__all__``; shown by ``pytest --help``, ``--fixtures`` and ``--markers``; accepted in each of its three forms (the
verbose header names the source); accepted by ``trtcap ... --help``; written into a real sweep's record; and named
in the user documentation (the README and docs/). A few subprocess runs in all, each shared by the checks that
read it.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
#: The user documentation: the README and the reference under docs/, where a user looks a name up.
DOCS = "\n".join(path.read_text(encoding="utf-8")
                 for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])

#: ``from trtcap_guards import NAME`` -> the issue that promises it.
GUARDS_NAMES: dict[str, int] = {
    "get_target_compute_capabilities": 2, "trt_rtx_targets_turing": 2, "turing_safe_gemm_dtype": 2,
    "declare_targets": 2, "clear_declared_targets": 2, "capability_decision": 2,
    "gemm_capability_validator": 2, "attention_capability_validator": 2, "cdist_forward_capability_validator": 2,
    "convolution_capability_validator": 2, "bf16_capability_validator": 2,
    "install": 2, "uninstall": 2, "installed": 2, "neutralize": 2, "import_torch_tensorrt": 2, "fired": 2,
    "RULES": 2, "UnsupportedTargetWarning": 2, "unreviewed_targets": 11,
    "state_snapshot": 10, "restore_state": 10,
}

#: ``from pytest_trtcap import NAME`` -> the issue that promises it.
PLUGIN_NAMES: dict[str, int] = {
    "count_partitions": 3, "assert_partition_counts": 3, "PartitionCounts": 3, "expected_partition_counts": 3,
    "TrtCapabilityMixin": 6, "TrtcapLeakWarning": 9, "TrtcapLeakError": 9,
    "unservable_placements": 11, "assert_servable_placements": 11, "assert_trt_close": 11,
    "TrtcapAuditError": 11, "UnsupportedTargetWarning": 12,
    "unservable_layers": 36, "assert_servable_layers": 36, "UnservableLayer": 36,
}

#: ``module.attribute`` reached through a submodule the issues or docs name.
SUBMODULE_NAMES: dict[str, int] = {
    "trtcap_guards.rules.RULES": 2, "trtcap_guards.review.review_problems": 11,
    "trtcap_guards.builder.builder_targets": 16, "pytest_trtcap.hooks.pytest_trtcap_target_capabilities": 3,
    "pytest_trtcap.hooks.pytest_trtcap_isolated_state": 3,
}


class Setting(NamedTuple):
    """One setting in its three forms, as the issue writes them, with a value each form accepts."""

    option: str
    env: str
    ini: str
    help_form: str  # how ``pytest --help`` shows the option (its metavar or choices)
    value: str  # a valid value; "" for a flag
    issue: int


SETTINGS: list[Setting] = [
    Setting("--trt-target-sm", "TRTCAP_TARGET_SM", "trt_target_sm", "--trt-target-sm=LIST", "7.5", 3),
    Setting("--trt-backend", "TRTCAP_BACKEND", "trt_backend", "--trt-backend={auto,rtx,standard}", "rtx", 3),
    Setting("--trtcap-guards", "TRTCAP_GUARDS", "trtcap_guards", "--trtcap-guards={on,off}", "on", 3),
    Setting("--trtcap-neutralize", "TRTCAP_NEUTRALIZE", "trtcap_neutralize", "--trtcap-neutralize=TARGET",
            "aten.linear.default", 3),
    Setting("--trtcap-strict", "TRTCAP_STRICT", "trtcap_strict", "--trtcap-strict", "", 3),
    Setting("--trtcap-gpu-less-import", "TRTCAP_GPU_LESS_IMPORT", "trtcap_gpu_less_import",
            "--trtcap-gpu-less-import={auto,off}", "auto", 6),
    Setting("--trtcap-audit", "TRTCAP_AUDIT", "trtcap_audit", "--trtcap-audit", "", 11),
    Setting("--trtcap-needs-gpu", "TRTCAP_NEEDS_GPU", "trtcap_needs_gpu", "--trtcap-needs-gpu={fail,skip}", "skip", 13),
    Setting("--trtcap-builder-targets", "TRTCAP_BUILDER_TARGETS", "trtcap_builder_targets",
            "--trtcap-builder-targets={on,off}", "on", 16),
    Setting("--trtcap-audit-layers", "TRTCAP_AUDIT_LAYERS", "trtcap_audit_layers", "--trtcap-audit-layers", "", 36),
]

FIXTURES: dict[str, int] = {
    "turing_safe_gemm_dtype": 3, "trt_targets_turing": 3, "trt_capability": 3, "expected_partition_counts": 3,
}
MARKERS: dict[str, int] = {
    "trt_fp32_gemm": 3, "trt_cdist_matmul": 3, "trt_conv3d": 3, "trt_bf16": 3, "trtcap_no_isolation": 3,
}
#: ``trtcap`` subcommand -> the flags its issue promises (issue 4; ``--accept-unverified``: issue 12).
COMMAND_FLAGS: dict[str, tuple[str, ...]] = {
    "sweep": ("--arms", "--out", "--format", "json", "markdown"),
    "compare": ("BEFORE", "AFTER", "--format", "json", "markdown", "--accept-unverified"),
}
#: Per-test record fields (issue 4: outcome and signature; issue 12: ``"reason"``) and record fields (issue 4: one
#: record per arm, with its reconciliation; issue 12: ``"disagreements"``; issue 10: collected, exit status).
RECORD_TEST_FIELDS = ("outcome", "signature", "reason")
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")  # issue 4


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A fresh process with no ``TRTCAP_*`` or ``PYTEST_ADDOPTS`` from the developer's shell, plus ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRTCAP_") and k != "PYTEST_ADDOPTS"}
    clean.update(env or {})
    return subprocess.run(args, cwd=cwd, env=clean, capture_output=True, text=True, timeout=300)


def _pytest(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd, env)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A rootdir of its own (an empty ini stops pytest from reading this repository's) with one passing test."""
    root = tmp_path_factory.mktemp("names")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def pytest_help(suite: Path) -> str:
    result = _pytest(["--help"], suite)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def headers(suite: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The verbose header with every setting given as an option, as an environment variable, and as an ini key."""
    options = [part for s in SETTINGS for part in ([s.option, s.value] if s.value else [s.option])]
    environ = {s.env: s.value or "1" for s in SETTINGS}
    ini_root = tmp_path_factory.mktemp("ini")
    (ini_root / "pytest.ini").write_text(
        "[pytest]\n" + "".join(f"{s.ini} = {s.value or 'true'}\n" for s in SETTINGS), encoding="utf-8")
    (ini_root / "test_one.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    runs = {"option": _pytest(["-v", *options], suite), "env": _pytest(["-v"], suite, environ),
            "ini": _pytest(["-v"], ini_root)}
    for form, result in runs.items():
        assert result.returncode == 0, (form, result.stdout, result.stderr)
    return {form: result.stdout for form, result in runs.items()}


@pytest.mark.parametrize(("package", "name", "issue"),
                         [("trtcap_guards", name, GUARDS_NAMES[name]) for name in sorted(GUARDS_NAMES)]
                         + [("pytest_trtcap", name, PLUGIN_NAMES[name]) for name in sorted(PLUGIN_NAMES)])
def test_public_name_is_importable_exported_and_documented(package: str, name: str, issue: int) -> None:
    module = importlib.import_module(package)
    assert hasattr(module, name), f"issue {issue}: {package}.{name} missing"
    assert name in module.__all__
    assert name in DOCS


@pytest.mark.parametrize("path", sorted(SUBMODULE_NAMES))
def test_submodule_name_is_importable(path: str) -> None:
    module, _, attribute = path.rpartition(".")
    assert hasattr(importlib.import_module(module), attribute), f"issue {SUBMODULE_NAMES[path]}: {path} missing"


def test_the_guard_folder_refuses_its_old_import_name() -> None:
    """Issue 9: ``import guards`` from the repository root fails at once, saying to import ``trtcap_guards``."""
    result = _run([sys.executable, "-c", "import guards"], REPO)
    assert result.returncode == 1
    assert "ImportError" in result.stderr and "trtcap_guards" in result.stderr.splitlines()[-1]


def test_one_warning_class_under_both_names() -> None:
    import pytest_trtcap
    import trtcap_guards

    assert pytest_trtcap.UnsupportedTargetWarning is trtcap_guards.UnsupportedTargetWarning
    assert issubclass(pytest_trtcap.TrtcapLeakWarning, Warning)
    assert issubclass(pytest_trtcap.TrtcapLeakError, Exception)
    assert issubclass(pytest_trtcap.TrtcapAuditError, Exception)


# (callable, the parameter names the issue writes, those of them that default to None)
SIGNATURES = [
    ("trtcap_guards.get_target_compute_capabilities", ("settings",), ("settings",)),
    ("trtcap_guards.trt_rtx_targets_turing", ("settings",), ("settings",)),
    ("trtcap_guards.turing_safe_gemm_dtype", ("settings",), ("settings",)),
    ("trtcap_guards.capability_decision", ("settings",), ("settings",)),
    ("trtcap_guards.gemm_capability_validator", ("node", "settings"), ("settings",)),
    ("trtcap_guards.attention_capability_validator", ("node", "settings"), ("settings",)),
    ("trtcap_guards.cdist_forward_capability_validator", ("node", "settings"), ("settings",)),
    ("trtcap_guards.convolution_capability_validator", ("node", "settings"), ("settings",)),
    ("trtcap_guards.bf16_capability_validator", ("node", "settings"), ("settings",)),
    ("trtcap_guards.neutralize", ("target",), ()),
    ("pytest_trtcap.count_partitions", ("module",), ()),
    ("pytest_trtcap.assert_partition_counts", ("module", "expected"), ()),
    ("pytest_trtcap.expected_partition_counts", ("default", "turing"), ()),
    ("pytest_trtcap.unservable_placements", ("module", "settings"), ("settings",)),
    ("pytest_trtcap.assert_servable_placements", ("module", "settings"), ("settings",)),
    ("pytest_trtcap.assert_trt_close", ("actual", "expected", "settings"), ("settings",)),
]


@pytest.mark.parametrize(("path", "names", "none_defaults"), SIGNATURES, ids=[s[0] for s in SIGNATURES])
def test_parameters_are_named_as_the_issues_write_them(path: str, names: tuple, none_defaults: tuple) -> None:
    module, _, attribute = path.rpartition(".")
    parameters = inspect.signature(getattr(importlib.import_module(module), attribute)).parameters
    for name in names:
        assert name in parameters, f"{path}: no parameter {name!r}"
    for name in none_defaults:
        assert parameters[name].default is None, f"{path}({name}=...) has no default None"


def test_assert_trt_close_takes_torch_tolerances_as_keywords() -> None:
    """Issue 11: ``assert_trt_close(actual, expected, **tolerances)``."""
    from pytest_trtcap import assert_trt_close

    kinds = {p.kind for p in inspect.signature(assert_trt_close).parameters.values()}
    assert inspect.Parameter.VAR_KEYWORD in kinds


def test_named_tuples_and_decision_carry_the_promised_fields() -> None:
    """Issue 3: ``PartitionCounts(acc, gpu)``; issue 11: the block, the node, its op and the rule; issue 2: the
    decision's targets, source, backend, boolean and reason (docs: ``targets_turing``, ``origin``)."""
    import pytest_trtcap
    import trtcap_guards

    assert pytest_trtcap.PartitionCounts(1, 2) == pytest_trtcap.PartitionCounts(acc=1, gpu=2)
    assert pytest_trtcap.UnservablePlacement._fields == ("block", "node", "op", "rule")
    decision = trtcap_guards.capability_decision()
    for field in ("targets", "source", "origin", "backend", "targets_turing", "reason"):
        assert hasattr(decision, field), field


def test_decision_sources_are_named_as_issue_2_writes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import trtcap_guards

    monkeypatch.setenv("TRTCAP_TARGET_SM", "8.9")
    assert trtcap_guards.capability_decision().source == "TRTCAP_TARGET_SM"
    with trtcap_guards.declare_targets("7.5"):
        assert trtcap_guards.capability_decision().source == "declared"


def test_mixin_carries_the_fixtures_names() -> None:
    """Issue 6: ``self.trt_targets_turing``, ``self.turing_safe_gemm_dtype``, ``self.expected_partition_counts``."""
    from pytest_trtcap import TrtCapabilityMixin

    for name in ("trt_targets_turing", "turing_safe_gemm_dtype", "expected_partition_counts", "trt_capability"):
        assert hasattr(TrtCapabilityMixin, name), name


def test_entry_points_are_the_promised_ones() -> None:
    """Issue 3: group ``pytest11``, name ``trtcap``, module ``pytest_trtcap.plugin``; issue 4: console script."""
    plugin = {e.name: e.value for e in entry_points(group="pytest11")}
    assert plugin.get("trtcap") == "pytest_trtcap.plugin"
    assert "trtcap" in {e.name for e in entry_points(group="console_scripts")}


def test_docs_name_the_plugin_entry_point() -> None:
    """Issue 3: a user disabling or pinning the plugin needs its group, name and module."""
    assert "`pytest11`" in DOCS and "`trtcap`" in DOCS and "`pytest_trtcap.plugin`" in DOCS


@pytest.mark.parametrize("hook", ["pytest_trtcap_target_capabilities", "pytest_trtcap_isolated_state"])
def test_hook_is_registered_taking_config(hook: str, pytestconfig: pytest.Config) -> None:
    caller = getattr(pytestconfig.pluginmanager.hook, hook)
    assert caller.spec is not None and caller.spec.argnames == ("config",)
    assert caller.spec.opts["firstresult"] is (hook == "pytest_trtcap_target_capabilities")  # issue 3
    assert hook in DOCS


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.option for s in SETTINGS])
def test_setting_is_in_pytest_help_in_its_three_forms(setting: Setting, pytest_help: str) -> None:
    flat = " ".join(pytest_help.split())  # argparse wraps the help text anywhere
    assert setting.help_form in flat
    assert f"env {setting.env}, ini {setting.ini}]" in flat
    assert f"\n  {setting.ini} (" in pytest_help  # pytest's own list of ini keys
    for name in (setting.option, setting.env, setting.ini):
        assert name in DOCS


@pytest.mark.parametrize("form", ["option", "env", "ini"])
@pytest.mark.parametrize("setting", SETTINGS, ids=[s.option for s in SETTINGS])
def test_setting_is_accepted_in_each_form_and_named_as_its_source(
    setting: Setting, form: str, headers: dict[str, str]
) -> None:
    source = {"option": setting.option, "env": setting.env, "ini": f"ini {setting.ini}"}[form]
    header = "\n".join(line for line in headers[form].splitlines() if line.startswith("trtcap:"))
    assert f"from {source}" in header


def test_a_bad_value_is_a_usage_error_naming_the_option_and_value(suite: Path) -> None:
    """Issue 3: exit code 4, the option and the bad value named, no traceback."""
    result = _pytest(["--trt-target-sm", "banana"], suite)
    assert result.returncode == 4
    assert "--trt-target-sm" in result.stderr and "banana" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_no_trtcap_disables_the_plugin(suite: Path) -> None:
    """Issue 3: ``-p no:trtcap`` disables it (its options are gone)."""
    result = _pytest(["--help", "-p", "no:trtcap"], suite)
    assert result.returncode == 0 and "--trt-target-sm" not in result.stdout


def test_fixtures_are_listed(suite: Path) -> None:
    result = _pytest(["--fixtures"], suite)
    listed = {line.split(" ")[0] for line in result.stdout.splitlines() if " -- " in line}
    missing = {name: issue for name, issue in FIXTURES.items() if name not in listed}
    assert not missing
    assert all(name in DOCS for name in FIXTURES)


def test_markers_are_listed(suite: Path) -> None:
    result = _pytest(["--markers"], suite)
    missing = {name: issue for name, issue in MARKERS.items() if f"@pytest.mark.{name}:" not in result.stdout}
    assert not missing
    assert all(name in DOCS for name in MARKERS)


@pytest.mark.parametrize("command", [["trtcap"], [sys.executable, "-m", "pytest_trtcap"]], ids=["script", "module"])
def test_command_and_its_subcommands_answer_help(command: list[str], suite: Path) -> None:
    """Issue 4: ``trtcap`` (console script; also ``python -m pytest_trtcap``) with ``sweep`` and ``compare``."""
    if command == ["trtcap"]:
        command = [str(Path(sys.executable).with_name("trtcap"))]
    top = _run([*command, "--help"], suite)
    assert top.returncode == 0 and "sweep" in top.stdout and "compare" in top.stdout
    for subcommand, flags in COMMAND_FLAGS.items():
        result = _run([*command, subcommand, "--help"], suite)
        assert result.returncode == 0, result.stderr
        missing = [flag for flag in flags if flag not in result.stdout]
        assert not missing, (subcommand, missing)
        assert all(flag in DOCS for flag in flags)


SWEPT_SUITE = """
    import pytest

    @pytest.fixture
    def broken():
        raise RuntimeError("set-up fails")

    def test_passes():
        pass

    def test_fails_on_turing(trt_targets_turing):
        assert not trt_targets_turing

    def test_skips():
        pytest.skip("not here")

    @pytest.mark.xfail(reason="known")
    def test_xfails():
        assert False

    @pytest.mark.xfail(reason="known")
    def test_xpasses():
        pass

    def test_errors(broken):
        pass

    @pytest.mark.trt_fp32_gemm
    def test_fp32_gemm():
        pass
"""


class Swept(NamedTuple):
    """A real sweep at 7.5 and 8.9 of a suite with every outcome and one Turing-only failure."""

    result: subprocess.CompletedProcess
    out: Path
    root: Path


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Swept:
    root = tmp_path_factory.mktemp("swept")
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (root / "test_outcomes.py").write_text(textwrap.dedent(SWEPT_SUITE), encoding="utf-8")
    out = root / "records"
    trtcap = str(Path(sys.executable).with_name("trtcap"))
    result = _run([trtcap, "sweep", "--arms", "7.5,8.9", "--out", str(out), "-q", "--", "-p", "no:cacheprovider",
                   str(root)], root)
    return Swept(result, out, root)


def _record(swept: Swept, arm: str) -> dict:
    return json.loads((swept.out / f"arm-{arm}.json").read_text(encoding="utf-8"))


def test_sweep_exit_status_one_for_an_arm_specific_failure(swept: Swept) -> None:
    """Issue 4: exit 1 for arm-specific failures; each arm complete."""
    assert swept.result.returncode == 1, swept.result.stdout + swept.result.stderr
    assert "RESULT: COMPLETE" in swept.result.stdout


@pytest.mark.parametrize("arm", ["7.5", "8.9"])
def test_sweep_writes_one_record_per_arm_with_the_promised_fields(swept: Swept, arm: str) -> None:
    record = _record(swept, arm)
    assert record["schema"] == "trtcap-record" and record["version"] == 2  # docs/trtcap.md
    assert record["arm"] == arm
    assert record["collected"] == 7
    assert record["pytest"]["exitstatus"] == 1 and "command" in record["pytest"]
    assert "collection_errors" in record
    assert record["reconciliation"]["result"] == "COMPLETE"
    assert record["reconciliation"]["disagreements"] == []
    for test in record["tests"].values():
        for field in RECORD_TEST_FIELDS:
            assert field in test, field


@pytest.mark.parametrize("field", ["outcome", "signature", "reason", "collection_errors", "reconciliation",
                                   "disagreements", "arm", "collected"])
def test_docs_name_the_record_field(field: str) -> None:
    """Issues 4, 10 and 12 name these fields; a user reading records finds them by name where the docs describe
    the record (the paragraph of docs/trtcap.md that starts ``A record is JSON``)."""
    command_doc = (REPO / "docs" / "trtcap.md").read_text(encoding="utf-8")
    paragraph = command_doc[command_doc.index("A record is JSON"):].split("\n\n")[0]
    assert f"`{field}`" in paragraph, f"the record paragraph does not name the field {field!r}"


def test_record_outcomes_are_the_six_issue_4_names(swept: Swept) -> None:
    outcomes = {test["outcome"] for test in _record(swept, "7.5")["tests"].values()}
    assert outcomes == set(OUTCOMES)
    tests = _record(swept, "7.5")["tests"]
    skipped = tests["test_outcomes.py::test_fp32_gemm"]
    assert skipped["outcome"] == "skipped" and skipped["reason"].startswith("trtcap: ")
    assert tests["test_outcomes.py::test_skips"]["reason"] == "not here"


def test_compare_exit_statuses(swept: Swept) -> None:
    """Issue 4: compare exits 0 with no regression, 1 on regressions, 2 on an input it cannot use; issue 12: a side
    that cannot prove completeness is UNVERIFIED, exit 2, unless ``--accept-unverified``."""
    trtcap = str(Path(sys.executable).with_name("trtcap"))
    at_75, at_89 = str(swept.out / "arm-7.5.json"), str(swept.out / "arm-8.9.json")
    assert _run([trtcap, "compare", at_75, at_89], swept.root).returncode == 0
    regressed = _run([trtcap, "compare", at_89, at_75], swept.root)
    assert regressed.returncode == 1 and "regression" in regressed.stdout
    missing = _run([trtcap, "compare", at_75, str(swept.root / "nosuch.json")], swept.root)
    assert missing.returncode == 2 and "nosuch.json" in missing.stderr + missing.stdout
    junit = str(swept.out / "arm-7.5.xml")
    unverified = _run([trtcap, "compare", junit, at_89], swept.root)
    assert unverified.returncode == 2 and "RESULT: UNVERIFIED" in unverified.stdout
    accepted = _run([trtcap, "compare", "--accept-unverified", junit, at_89], swept.root)
    assert accepted.returncode == 0 and "UNVERIFIED" in accepted.stdout


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_compare_formats(swept: Swept, fmt: str) -> None:
    """Issue 4: ``--format json|markdown``."""
    trtcap = str(Path(sys.executable).with_name("trtcap"))
    at_75, at_89 = str(swept.out / "arm-7.5.json"), str(swept.out / "arm-8.9.json")
    result = _run([trtcap, "compare", "--format", fmt, at_89, at_75], swept.root)
    assert result.returncode == 1
    if fmt == "json":
        json.loads(result.stdout)


def test_an_unknown_arm_is_a_usage_error_naming_it(suite: Path) -> None:
    """Issue 4: an unknown arm value -> usage error naming it; exit 2 (bad usage)."""
    trtcap = str(Path(sys.executable).with_name("trtcap"))
    result = _run([trtcap, "sweep", "--arms", "banana", "--", str(suite)], suite)
    assert result.returncode == 2 and "banana" in result.stderr


def test_distribution_metadata_names() -> None:
    """Issue 2: distribution ``pytest-trtcap`` with extras ``rtx`` and ``test``; issue 9: ``py.typed`` in both
    packages and ``License-Expression``."""
    from importlib.metadata import metadata
    from importlib.resources import files

    meta = metadata("pytest-trtcap")
    assert {"rtx", "test"} <= set(meta.get_all("Provides-Extra") or [])
    assert meta.get("License-Expression") == "BSD-3-Clause"
    for package in ("trtcap_guards", "pytest_trtcap"):
        assert files(package).joinpath("py.typed").is_file(), package
    assert "pytest-trtcap[rtx]" in README


NEEDS_GPU_SUITE = """
    import torch

    def test_needs_a_device():
        torch.zeros(1, device="cuda")
"""


def test_needs_gpu_skip_reason_prefix(tmp_path: Path) -> None:
    """Issue 13: under ``--trtcap-needs-gpu skip`` on a host without a CUDA device, a test that fails for want of
    one is skipped with a reason that starts ``trtcap: needs a GPU:``."""
    pytest.importorskip("torch")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp_path / "test_gpu.py").write_text(textwrap.dedent(NEEDS_GPU_SUITE), encoding="utf-8")
    result = _pytest(["-rs", "--trtcap-needs-gpu", "skip"], tmp_path, {"CUDA_VISIBLE_DEVICES": ""})
    assert result.returncode == 0, result.stdout
    assert "trtcap: needs a GPU: " in result.stdout and "1 skipped" in result.stdout


def test_docs_have_the_section_issue_6_names() -> None:
    """Issue 6: the section "A capability lane on CPU runners" (now its own page, linked from the README)."""
    lane = (REPO / "docs" / "cpu-lane.md").read_text(encoding="utf-8")
    assert lane.startswith("# A capability lane on CPU runners\n")
    assert "[A capability lane on CPU runners](docs/cpu-lane.md)" in README
