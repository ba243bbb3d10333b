"""The plugin's settings as a user sees them: sources, precedence, the header, and usage errors.

Runs pytest inline (``pytester.runpytest``): nothing here imports torch, and every inline run must leave the
process as it found it (declared targets and backend, neutralized guards, the import hook), which the
``process_state_unchanged`` fixture (``conftest.py``) checks after each test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import trtcap_guards as guards
from pytest_trtcap import settings as trtcap_settings

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR

GEMM_TEST = """
import pytest

@pytest.mark.trt_fp32_gemm
def test_fp32_gemm():
    pass
"""



pytestmark = pytest.mark.usefixtures("process_state_unchanged")


# --- sources and precedence ----------------------------------------------------------------------------


@pytest.fixture
def targets_read() -> Iterator[list[str]]:
    """The source named by each reading of a targets text through the guards' public ``parse_targets``."""
    read: list[str] = []
    real = guards.parse_targets

    def counting(text: str, name: str = guards.ENV_TARGETS, **kwargs: Any) -> Any:
        read.append(name)
        return real(text, name, **kwargs)

    guards.parse_targets = counting  # kept on the package until deleted (the package's names are not)
    try:
        yield read
    finally:
        del guards.parse_targets


@pytest.mark.parametrize("given", ["--trt-target-sm", "TRTCAP_TARGET_SM", "ini trt_target_sm"])
def test_a_targets_value_is_read_once_per_session_where_it_enters(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, targets_read: list[str], given: str
) -> None:
    """Read before conftests load (the import hook answers with it) and again at configure: one reading."""
    pytester.makepyfile(GEMM_TEST)
    args = ["--trt-target-sm", "7.5"] if given == "--trt-target-sm" else []
    if given == "TRTCAP_TARGET_SM":
        monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5")
    if given.startswith("ini"):
        pytester.makeini("[pytest]\ntrt_target_sm = 7.5\n")
    result = pytester.runpytest(*args)
    result.assert_outcomes(skipped=1)
    assert targets_read == [given]


@pytest.mark.parametrize(
    "cli, env, ini, hook, winner",
    [
        ("7.5", None, None, None, "--trt-target-sm"),
        (None, "7.5", None, None, "TRTCAP_TARGET_SM"),
        (None, None, "7.5", None, "ini trt_target_sm"),
        (None, None, None, "'7.5'", "hook pytest_trtcap_target_capabilities"),
        (None, None, None, "[(7, 5), (8, 9)]", "hook pytest_trtcap_target_capabilities"),
        # precedence: command line > environment > ini > hook
        ("7.5", "8.9", "8.6", "'8.0'", "--trt-target-sm"),
        (None, "sm_75", "8.6", "'8.0'", "TRTCAP_TARGET_SM"),
        (None, None, "75", "'8.0'", "ini trt_target_sm"),
    ],
)
def test_target_sm_source_is_shown_in_header_and_skip_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, hook, winner
) -> None:
    pytester.makepyfile(GEMM_TEST)
    args = ["-rs"]
    if cli is not None:
        args += ["--trt-target-sm", cli]
    if env is not None:
        monkeypatch.setenv("TRTCAP_TARGET_SM", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrt_target_sm = {ini}\n")
    if hook is not None:
        pytester.makeconftest(f"def pytest_trtcap_target_capabilities(config):\n    return {hook}\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=1)
    shown = "7.5,8.9" if hook == "[(7, 5), (8, 9)]" else "7.5"
    result.stdout.fnmatch_lines([
        f"trtcap: targets: {shown} (from {winner}); *; targets Turing on TensorRT-RTX: yes; guards: *",
        f"SKIPPED [[]1[]] test_*.py:*: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 "
        f"(targets {shown} from {winner})",
    ])


@pytest.mark.parametrize(
    "cli, env, ini, header, outcome",
    [
        ("standard", None, None, "backend: standard (from --trt-backend)", "passed"),
        (None, "standard", None, "backend: standard (from TRTCAP_BACKEND)", "passed"),
        (None, None, "standard", "backend: standard (from ini trt_backend)", "passed"),
        ("rtx", "standard", "standard", "backend: rtx (from --trt-backend)", "skipped"),
        (None, "rtx", "standard", "backend: rtx (from TRTCAP_BACKEND)", "skipped"),
        ("auto", "standard", None, "backend: rtx (detected (--trt-backend=auto))", "skipped"),
        (None, None, None, "backend: rtx (detected)", "skipped"),
    ],
)
def test_backend_source_and_effect(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, header, outcome
) -> None:
    """On standard TensorRT the Turing limits of TensorRT-RTX do not apply: the FP32 GEMM test runs at 7.5."""
    pytester.makepyfile(GEMM_TEST)
    args = ["--trt-target-sm", "7.5"]
    if cli is not None:
        args += ["--trt-backend", cli]
    if env is not None:
        monkeypatch.setenv("TRTCAP_BACKEND", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrt_backend = {ini}\n")
    result = pytester.runpytest(*args)
    result.assert_outcomes(**{outcome: 1})
    turing = "no" if outcome == "passed" else "yes"
    result.stdout.fnmatch_lines(
        [f"trtcap: targets: 7.5 (from --trt-target-sm); {header}; targets Turing on TensorRT-RTX: {turing}; guards: *"]
    )


@pytest.mark.parametrize(
    "cli, env, ini, shown",
    [
        (["--trtcap-guards", "off"], None, None, "off (from --trtcap-guards)"),
        (None, "0", None, "off (from TRTCAP_GUARDS)"),
        (None, None, "no", "off (from ini trtcap_guards)"),
        (None, "off", "on", "off (from TRTCAP_GUARDS)"),
        (["--trtcap-guards", "on"], "off", "off", "[oi]n*"),
        (None, None, None, "[oi]n*"),
    ],
)
def test_guards_setting(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, shown) -> None:
    pytester.makepyfile("def test_one(): pass")
    if env is not None:
        monkeypatch.setenv("TRTCAP_GUARDS", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrtcap_guards = {ini}\n")
    result = pytester.runpytest(*(cli or []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"trtcap: targets: *; guards: {shown}"])
    if "off" not in shown:
        assert "guards: off" not in result.stdout.str()


@pytest.mark.parametrize(
    "cli, env, ini, shown",
    [
        (["--trtcap-neutralize", "aten.mm.default", "--trtcap-neutralize", "aten.linear.default"], None, None,
         "aten.linear.default, aten.mm.default"),
        (None, "aten.bmm.default, aten.mm.default", None, "aten.bmm.default, aten.mm.default"),
        (None, None, "aten.addmm.default\n    aten.convolution.default",
         "aten.addmm.default, aten.convolution.default"),
        (["--trtcap-neutralize", "aten.mv.default"], "aten.mm.default", "aten.bmm.default", "aten.mv.default"),
    ],
)
def test_neutralize_setting_in_header_and_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, shown
) -> None:
    pytester.makepyfile(
        f"""
        import trtcap_guards as guards

        def test_neutralized_while_the_session_runs():
            assert ", ".join(guards.neutralized()) == {shown!r}
        """
    )
    if env is not None:
        monkeypatch.setenv("TRTCAP_NEUTRALIZE", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrtcap_neutralize =\n    {ini}\n")
    result = pytester.runpytest("-v", *(cli or []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        f"trtcap: neutralized: {shown} (from *)",
        "*- trtcap -*",
        f"neutralized guards: {shown}",
    ])
    # process_state_unchanged checks that the neutralization ended with the inner session


@pytest.mark.parametrize(
    "cli, env, ini, shown",
    [
        (["--trtcap-strict"], None, None, "strict"),
        (None, "1", None, "strict"),
        (None, "0", None, "warn"),
        (None, "false", "true", "warn"),
        (None, None, "yes", "strict"),
        (["--trtcap-strict"], "0", "false", "strict"),
    ],
)
def test_strict_setting(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, shown) -> None:
    pytester.makepyfile("def test_one(): pass")
    if env is not None:
        monkeypatch.setenv("TRTCAP_STRICT", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrtcap_strict = {ini}\n")
    result = pytester.runpytest("-v", *(cli or []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"trtcap: gpu-less import: *; isolation: {shown} (*)"])


@pytest.mark.parametrize(
    "cli, env, ini, source",
    [
        (["--trtcap-gpu-less-import", "off"], None, None, "--trtcap-gpu-less-import"),
        (None, "OFF", None, "TRTCAP_GPU_LESS_IMPORT"),
        (None, None, "off", "ini trtcap_gpu_less_import"),
        (None, "off", "auto", "TRTCAP_GPU_LESS_IMPORT"),
    ],
)
def test_gpu_less_import_setting(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, cli, env, ini, source
) -> None:
    pytester.makepyfile("def test_one(): pass")
    if env is not None:
        monkeypatch.setenv("TRTCAP_GPU_LESS_IMPORT", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrtcap_gpu_less_import = {ini}\n")
    result = pytester.runpytest("-v", *(cli or []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"trtcap: gpu-less import: off (from {source}); isolation: warn (default)"])


# --- bad values: usage errors that name the source and the value ---------------------------------------

BAD_VALUES = {
    "target_sm": "7.x",
    "backend": "cuda",
    "guards": "maybe",
    "neutralize": "linear",
    "strict": "banana",
    "gpu_less_import": "sometimes",
    "needs_gpu": "sometimes",
    "builder_targets": "maybe",
    "audit": "banana",
    "audit_layers": "perhaps",
}


def _bad_cases():
    for spec in trtcap_settings.SPECS:
        bad = BAD_VALUES[spec.dest]
        if spec.kind != "flag":  # --trtcap-strict takes no value
            yield pytest.param(spec, "cli", bad, spec.option, id=f"{spec.dest}-cli")
        yield pytest.param(spec, "env", bad, spec.env, id=f"{spec.dest}-env")
        yield pytest.param(spec, "ini", bad, f"ini {spec.ini}", id=f"{spec.dest}-ini")


def test_every_setting_has_a_bad_value_case() -> None:
    assert {spec.dest for spec in trtcap_settings.SPECS} == set(BAD_VALUES)


@pytest.mark.parametrize("spec, where, bad, named", list(_bad_cases()))
def test_bad_value_is_a_usage_error_naming_source_and_value(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, spec, where, bad, named
) -> None:
    pytester.makepyfile("def test_one(): pass")
    args = []
    if where == "cli":
        args = [spec.option, bad]
    elif where == "env":
        monkeypatch.setenv(spec.env, bad)
    else:
        pytester.makeini(f"[pytest]\n{spec.ini} = {bad}\n")
    result = pytester.runpytest(*args)
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: trtcap: {named}: *{bad!r}*"])
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output
    assert "passed" not in output  # nothing ran


def test_bad_value_in_a_losing_source_is_not_read(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Precedence decides first: a bad environment value under a good command-line value is never parsed."""
    pytester.makepyfile(GEMM_TEST)
    monkeypatch.setenv("TRTCAP_BACKEND", "cuda")
    pytester.makeini("[pytest]\ntrt_backend = cuda\n")
    result = pytester.runpytest("--trt-target-sm", "7.5", "--trt-backend", "standard")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*backend: standard (from --trt-backend)*"])


@pytest.mark.parametrize(
    "returned, named",
    [("'seven'", "'seven'"), ("42", "42"), ("[(7,)]", "(7,)"), ("[(7, 5), 'x.y']", "'x.y'"), ("True", "True")],
)
def test_bad_hook_value_is_a_usage_error_naming_the_hook(pytester: pytest.Pytester, returned: str, named: str) -> None:
    pytester.makeconftest(f"def pytest_trtcap_target_capabilities(config):\n    return {returned}\n")
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest()
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_target_capabilities: *"])
    assert named in result.stderr.str()  # the offending value
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_hook_is_not_consulted_when_a_setting_gives_targets(pytester: pytest.Pytester) -> None:
    """firstresult hook, consulted only as the last source: here it would raise if it were called."""
    pytester.makeconftest(
        "def pytest_trtcap_target_capabilities(config):\n    raise AssertionError('hook consulted')\n"
    )
    pytester.makepyfile(GEMM_TEST)
    result = pytester.runpytest("--trt-target-sm", "8.9")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["trtcap: targets: 8.9 (from --trt-target-sm);*targets Turing on TensorRT-RTX: no; guards: *"]
    )


def test_unsupported_target_warns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GEMM_TEST)
    # a value unique to this test: the warning is issued once per process and value
    result = pytester.runpytest("--trt-target-sm", "7.5,9.0,10.3")
    result.assert_outcomes(skipped=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*UnsupportedTargetWarning: --trt-target-sm: TensorRT-RTX does not build for 9.0,10.3; "
        "it supports 7.5,8.0,8.6,8.9,12.0,12.1; *",
    ])


@pytest.mark.parametrize("given", [(), ("--trt-target-sm", "8.9")], ids=["nothing given", "a setting given"])
def test_a_targets_hook_pytest_loads_during_collection_is_a_usage_error_naming_its_file(
    pytester: pytest.Pytester, given: tuple
) -> None:
    """The targets are settled when pytest configures; a conftest it finds while collecting comes too late, and its
    answer would be ignored without a word. Before the first test: exit 4, naming the hook and the file."""
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text("def pytest_trtcap_target_capabilities(config):\n    return '7.5'\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *given)
    assert result.ret == USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_target_capabilities in *sub*conftest.py: *"])
    assert "0 passed" not in result.stdout.str() and "1 passed" not in result.stdout.str()


def test_the_same_conftest_counts_where_pytest_loads_it_at_start(pytester: pytest.Pytester) -> None:
    """Given on the command line, the folder's conftest loads before configure, and its answer is the targets."""
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text("def pytest_trtcap_target_capabilities(config):\n    return '8.9'\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "sub")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["trtcap: targets: 8.9 (from hook pytest_trtcap_target_capabilities);*"])


def test_under_xdist_each_test_fails_with_the_late_targets_hook_error(pytester: pytest.Pytester) -> None:
    """A worker cannot stop the session cleanly: there each test fails with the same message."""
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text("def pytest_trtcap_target_capabilities(config):\n    return '7.5'\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n\ndef test_two():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*trtcap: hook pytest_trtcap_target_capabilities in *sub*conftest.py: *"])
    assert "session.py" not in result.stdout.str()  # the message alone, not a traceback into the plugin


def test_with_the_setting_off_the_header_still_says_when_the_project_installed_the_guards(
    pytester: pytest.Pytester,
) -> None:
    """``--trtcap-guards off`` keeps the plugin from installing them; a conftest that installs them itself is still
    shown, not hidden behind "off"."""
    pytester.makeconftest("import trtcap_guards as guards\n\nguards.import_torch_tensorrt()\nguards.install()\n")
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-guards", "off")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["trtcap: targets: *; guards: off (from --trtcap-guards); installed by the project"])


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="[tool.pytest] is read from pytest 9 on")
def test_in_pytest_9s_native_table_an_ini_value_is_given_as_text(pytester: pytest.Pytester) -> None:
    """What the README says of ``[tool.pytest]``: a quoted value is read (and shown with its source); a bare
    number is refused by pytest itself, naming the key."""
    pytester.makepyfile("def test_one():\n    pass\n")
    pytester.makefile(".toml", pyproject='[tool.pytest]\ntrt_target_sm = "8.9"\n')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["trtcap: targets: 8.9 (from ini trt_target_sm);*"])
    pytester.makefile(".toml", pyproject="[tool.pytest]\ntrt_target_sm = 8.9\n")
    refused = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert refused.ret == USAGE_ERROR
    assert "trt_target_sm" in refused.stderr.str()


@pytest.mark.parametrize("where, value, located", [
    ("ini", "7.5,10.1", "tox.ini:3"),  # pytester.makeini writes a tox.ini
    ("option", "7.5,10.2", "--trt-target-sm 7.5,10.2"),
    ("env", "7.5,10.4", "TRTCAP_TARGET_SM=7.5,10.4"),
])
def test_an_unsupported_target_is_warned_at_the_setting_that_gave_it(pytester: pytest.Pytester, monkeypatch,
                                                                      where, value, located) -> None:
    """The warnings summary attributes the warning to the user's setting (the ini file's line, the option, the
    variable), not to the plugin's own source line."""
    pytester.makeini(f"[pytest]\n# targets of this project\ntrt_target_sm = {value}\n" if where == "ini" else
                     "[pytest]\n")
    pytester.makepyfile(GEMM_TEST)
    if where == "env":
        monkeypatch.setenv("TRTCAP_TARGET_SM", value)
    result = pytester.runpytest(*(["--trt-target-sm", value] if where == "option" else []))
    result.assert_outcomes(skipped=1, warnings=1)
    summary = result.stdout.str().split("warnings summary", 1)[1]
    assert "settings.py" not in summary, summary
    assert summary.splitlines()[1].startswith(located), summary
    result.stdout.fnmatch_lines([f"*{located}*UnsupportedTargetWarning: *does not build for 10.*"])
