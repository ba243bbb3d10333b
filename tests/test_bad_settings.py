"""Hostile settings: warnings filters, unknown neutralize targets, hook results of the wrong shape, the plugin
loaded twice, and sources in the header. Each a usage error (exit 4) naming what was wrong, or harmless.

Inline runs where nothing imports Torch-TensorRT; subprocess runs where a conftest does.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

import trtcap_guards as guards

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR

GEMM_TEST = """
import pytest

@pytest.mark.trt_fp32_gemm
def test_fp32_gemm():
    pass
"""


@pytest.fixture(autouse=True)
def process_state_unchanged() -> Iterator[None]:
    """Inline runs share this process: a refused run must leave no declaration, neutralization or hook behind."""
    before = guards.state_snapshot(fired=False)
    hooks = [f for f in sys.meta_path if type(f).__name__ == "_ImportHook"]
    yield
    assert guards.state_snapshot(fired=False) == before
    assert [f for f in sys.meta_path if type(f).__name__ == "_ImportHook"] == hooks


def _clean(result: pytest.RunResult) -> str:
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    return output


# --- 9.0 under any warnings filter ---------------------------------------------------------------------


@pytest.mark.parametrize("where", ["cli", "env", "ini", "hook"])
@pytest.mark.parametrize("filters", ["-W", "ini"])
def test_unsupported_target_under_an_error_filter_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, filters: str
) -> None:
    pytester.makepyfile(GEMM_TEST)
    ini = ["[pytest]"]
    args = ["-W", "error"] if filters == "-W" else []
    if filters == "ini":
        ini.append("filterwarnings = error")
    named = {"cli": "--trt-target-sm", "env": "TRTCAP_TARGET_SM", "ini": "ini trt_target_sm",
             "hook": "hook pytest_trtcap_target_capabilities"}[where]
    if where == "cli":
        args += ["--trt-target-sm", "9.0"]
    elif where == "env":
        monkeypatch.setenv("TRTCAP_TARGET_SM", "9.0")
    elif where == "ini":
        ini.append("trt_target_sm = 9.0")
    else:
        pytester.makeconftest("def pytest_trtcap_target_capabilities(config):\n    return [(9, 0)]\n")
    pytester.makeini("\n".join(ini) + "\n")
    result = pytester.runpytest(*args)
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines([
        f"ERROR: trtcap: {named}: TensorRT-RTX does not build for 9.0; *(UnsupportedTargetWarning is an error "
        "under the warnings filter)",
    ])


def test_unsupported_target_under_an_error_filter_with_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GEMM_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-W", "error", "--trt-target-sm", "9.0")
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(["ERROR: trtcap: --trt-target-sm: TensorRT-RTX does not build for 9.0; *"])


@pytest.mark.parametrize("where", ["cli", "env", "hook"])
def test_unsupported_target_warns_once_per_run_from_every_source(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The hook's targets warn like the option's; the predicate does not repeat what the settings said."""
    pytester.makepyfile(GEMM_TEST)
    args = ["-v"]
    if where == "cli":
        args += ["--trt-target-sm", "7.5,9.0"]
    elif where == "env":
        monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5,9.0")
    else:
        pytester.makeconftest("def pytest_trtcap_target_capabilities(config):\n    return [(7, 5), (9, 0)]\n")
    result = pytester.runpytest(*args)
    result.assert_outcomes(skipped=1, warnings=1)
    assert result.stdout.str().count("UnsupportedTargetWarning: ") == 1
    result.stdout.fnmatch_lines(["*UnsupportedTargetWarning: *: TensorRT-RTX does not build for 9.0; *"])


@pytest.mark.parametrize(
    "returned, named",
    [("[(99999, 5)]", "(99999, 5)"), ("b'7.5'", "b'7.5'"), ("[(7, 10)]", "(7, 10)"), ("{'7.5': 1}", "{'7.5': 1}")],
)
def test_hook_targets_are_held_to_the_option_rules(pytester: pytest.Pytester, returned: str, named: str) -> None:
    conftest = pytester.makeconftest(f"def pytest_trtcap_target_capabilities(config):\n    return {returned}\n")
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest()
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_target_capabilities: *"])
    err = result.stderr.str()
    assert named in err and str(conftest) in err
    assert "capability 55" not in err


# --- unknown neutralize targets ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "imported_by, bad, suggested",
    [
        ("conftest", "ATEN.LINEAR.DEFAULT", "aten.linear.default"),
        ("test module", "aten.linaer.default", "aten.linear.default"),
    ],
)
def test_unknown_neutralize_target_is_a_usage_error_with_the_nearest_targets(
    pytester: pytest.Pytester, imported_by: str, bad: str, suggested: str
) -> None:
    """Checked against the registry at configure (a conftest imported Torch-TensorRT) or after collection. Which
    names are nearest, for each kind of slip, is checked in process (test_neutralize_option.py)."""
    if imported_by == "conftest":
        pytester.makeconftest("import torch_tensorrt\n")
    pytester.makepyfile("import torch_tensorrt\n\ndef test_one(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trtcap-neutralize", bad)
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(
        [f"ERROR: trtcap: --trtcap-neutralize: {bad!r} is not a converter target *; nearest: *"]
    )
    assert suggested in result.stderr.str().partition("nearest: ")[2]
    assert "neutralized guards" not in result.stdout.str() and "passed" not in result.stdout.str()


def test_unknown_neutralize_target_under_xdist_is_a_usage_error_too(pytester: pytest.Pytester) -> None:
    """Under xdist only the workers collect: the controller reads the registry itself before starting them,
    rather than run the session and claim in its summary that a target nobody registers was neutralized."""
    pytester.makepyfile("import torch_tensorrt\n\ndef test_one(): pass\n\ndef test_two(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--trtcap-neutralize",
                                           "aten.nosuch.default")
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(["ERROR: trtcap: --trtcap-neutralize: 'aten.nosuch.default' is not a converter "
                                 "target of the installed Torch-TensorRT; nearest: *"])
    assert "neutralized guards" not in result.stdout.str()


def test_known_neutralize_target_under_xdist_runs(pytester: pytest.Pytester) -> None:
    """The controller's own read of the registry passes it (one worker: each imports torch_tensorrt)."""
    pytester.makepyfile("import torch_tensorrt\n\ndef test_one(): pass\n\ndef test_two(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "1", "--trtcap-neutralize",
                                           "aten.linear.default")
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("where", ["cli", "env", "ini"])
def test_a_rule_target_in_other_case_is_refused_without_importing_torch_tensorrt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    pytester.makepyfile("import sys\n\ndef test_one():\n    assert 'torch_tensorrt' not in sys.modules")
    args = []
    if where == "cli":
        args = ["--trtcap-neutralize", "ATEN.LINEAR.DEFAULT"]
    elif where == "env":
        monkeypatch.setenv("TRTCAP_NEUTRALIZE", "aten.mm.default,ATEN.LINEAR.DEFAULT")
    else:
        pytester.makeini("[pytest]\ntrtcap_neutralize = ATEN.LINEAR.DEFAULT\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)  # a process without torch_tensorrt
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(["ERROR: trtcap: *: 'ATEN.LINEAR.DEFAULT' is not a converter target (converter targets "
                                 "are lower case); nearest: aten.linear.default*"])


# --- hook results of the wrong shape -------------------------------------------------------------------------

STATE_CONFTEST = """
STORE = []

def pytest_trtcap_isolated_state(config):
    return {returned}
"""


@pytest.mark.parametrize(
    "returned, named",
    [
        ("('store', lambda: list(STORE), lambda v: STORE.__setitem__(slice(None), v))", "('store', <function"),
        ("'store'", "'store'"),
        ("[('store', list)]", "('store', <class 'list'>)"),
        ("[(1, list, print)]", "(1, <class 'list'>"),
        ("[('store', 'snapshot', print)]", "'snapshot'"),
        ("42", "42"),
    ],
)
def test_isolated_state_hook_of_the_wrong_shape_is_a_usage_error(
    pytester: pytest.Pytester, returned: str, named: str
) -> None:
    conftest = pytester.makeconftest(STATE_CONFTEST.format(returned=returned))
    pytester.makepyfile("def test_one(): pass\ndef test_two(): pass")
    result = pytester.runpytest()
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines(["ERROR: trtcap: hook pytest_trtcap_isolated_state in *conftest.py: *"])
    err = result.stderr.str()
    assert named in err and str(conftest) in err
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()


def test_isolated_state_hook_of_the_right_shape_still_works(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(STATE_CONFTEST.format(
        returned="[('store', lambda: list(STORE), lambda v: STORE.__setitem__(slice(None), v))]"))
    pytester.makepyfile("from conftest import STORE\ndef test_a(): STORE.append(1)\ndef test_b(): assert STORE == []")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*test_a* leaked global state: *store*"])


# --- loading the plugin a second time by module name ------------------------------------------------------


@pytest.mark.parametrize("how", ["-p", "pytest_plugins", "both"])
def test_loading_the_plugin_by_module_name_is_harmless(pytester: pytest.Pytester, how: str) -> None:
    args = ["-v", "--trt-target-sm", "7.5"]
    if how in ("-p", "both"):
        args = ["-p", "pytest_trtcap.plugin", *args]
    if how in ("pytest_plugins", "both"):
        pytester.makeconftest("pytest_plugins = ['pytest_trtcap.plugin']\n")
    pytester.makepyfile(GEMM_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    _clean(result)
    result.assert_outcomes(skipped=1)
    assert result.stdout.str().count("trtcap: targets: 7.5 (from --trt-target-sm)") == 1
    result.stdout.fnmatch_lines(["*- trtcap -*", "capability skips: 1 (trt_fp32_gemm: 1)"])


@pytest.mark.parametrize("autoload", [True, False])
@pytest.mark.parametrize("names", [("trtcap", "pytest_trtcap.plugin"), ("pytest_trtcap.plugin", "trtcap")])
def test_naming_the_plugin_by_both_names_with_p_is_harmless(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, names: tuple, autoload: bool,
) -> None:
    """``-p`` unblocks the name it loads, so the name the first load blocked cannot keep the second out."""
    if not autoload:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(GEMM_TEST)
    result = pytester.runpytest_subprocess("-p", names[0], "-p", names[1], "-p", "no:cacheprovider",
                                           "--trt-target-sm", "7.5")
    _clean(result)
    result.assert_outcomes(skipped=1)
    assert result.stdout.str().count("trtcap: targets: 7.5 (from --trt-target-sm)") == 1


def test_p_no_trtcap_still_disables_after_a_module_name_load(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GEMM_TEST)
    result = pytester.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "trtcap:" not in result.stdout.str()


# --- the header names every value's source -------------------------------------------------------------------

IMPORTING_CONFTEST = """
import torch_tensorrt

def pytest_trtcap_target_capabilities(config):
    return "7.5"
"""


def test_hook_targets_answer_the_import_time_queries_and_the_header_says_so(pytester: pytest.Pytester) -> None:
    """A conftest that imports torch_tensorrt at module level and supplies 7.5 by the hook: answered with 7.5."""
    pytester.makeconftest(IMPORTING_CONFTEST)
    pytester.makepyfile("""
        import torch

        def test_answer():
            assert torch.cuda.get_device_capability() == (7, 5)
    """)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--trtcap-gpu-less-import", "auto", "--trtcap-guards", "on",
        "--trtcap-strict", "--trtcap-neutralize", "aten.mm.default",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([  # every value with its source (README: "the header shows each value with its source")
        "trtcap: targets: 7.5 (from hook pytest_trtcap_target_capabilities);*; "
        "guards: installed (* targets; on, from --trtcap-guards)",
        "trtcap: neutralized: aten.mm.default (from --trtcap-neutralize)",
        "trtcap: gpu-less import: applied (device queries answered with 7.5*) (auto, from --trtcap-gpu-less-import); "
        "isolation: strict (from --trtcap-strict)",
    ])
    result.stdout.fnmatch_lines(["*- trtcap -*", "gpu-less import: applied (device queries answered with 7.5*"])
    assert "answered with 8.9" not in result.stdout.str()


IMPORTS_IN_THE_HOOK = """
def pytest_trtcap_target_capabilities(config):
    import torch_tensorrt  # the answer depends on the installed Torch-TensorRT

    return "7.5" if torch_tensorrt.ENABLED_FEATURES.tensorrt_rtx else "8.9"
"""


def test_a_targets_hook_that_imports_torch_tensorrt_keeps_its_answer_and_the_settings(
    pytester: pytest.Pytester,
) -> None:
    """The import happens while the settings are being resolved: the session's settings are the resolved ones
    (the hook's targets, ``--trtcap-strict``), not defaults made by the import, nor a late-hook usage error."""
    pytester.makeconftest(IMPORTS_IN_THE_HOOK)
    pytester.makepyfile("import pytest\n\n@pytest.mark.trt_bf16\ndef test_bf16():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v", "-rs", "--trtcap-strict")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([
        "trtcap: targets: 7.5 (from hook pytest_trtcap_target_capabilities);*",
        "*isolation: strict (from --trtcap-strict)*",
        "SKIPPED * trtcap: TensorRT-RTX cannot serve BF16 on SM 7.5 (targets 7.5 from hook "
        "pytest_trtcap_target_capabilities)",
    ])


def test_isolated_state_hook_of_the_wrong_shape_under_xdist_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """The controller checks before it starts the workers: exit 4, not an INTERNALERROR from a worker."""
    conftest = pytester.makeconftest(STATE_CONFTEST.format(returned="('store', list, print)"))
    pytester.makepyfile("def test_one(): pass\ndef test_two(): pass")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.ret == USAGE_ERROR
    _clean(result)
    result.stderr.fnmatch_lines([f"ERROR: trtcap: hook pytest_trtcap_isolated_state in {conftest}: *single entry*"])


def test_an_entry_from_a_conftest_found_during_collection_is_still_held(pytester: pytest.Pytester) -> None:
    """Checking early must not freeze the entries: a conftest in a package loaded at collection adds its own."""
    pytester.mkpydir("pkg")
    pytester.path.joinpath("pkg", "conftest.py").write_text(STATE_CONFTEST.format(
        returned="[('pkg store', lambda: list(STORE), lambda v: STORE.__setitem__(slice(None), v))]"))
    pytester.path.joinpath("pkg", "test_leak.py").write_text(
        "from .conftest import STORE\ndef test_a(): STORE.append(1)\ndef test_b(): assert STORE == []\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")  # pkg/ found collecting
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*test_a* leaked global state: *pkg store*"])


@pytest.mark.parametrize("hook", ["pytest_trtcap_target_capabilities", "pytest_trtcap_isolated_state"])
def test_a_hook_value_whose_repr_raises_or_spans_lines_is_still_one_clean_error(
    pytester: pytest.Pytester, hook: str
) -> None:
    pytester.makeconftest(f"""
        class Hostile:
            def __iter__(self):
                raise RuntimeError("no")
            def __repr__(self):
                raise RuntimeError("no repr")

        class Lines:
            def __repr__(self):
                return "first\\nERROR: forged"

        def {hook}(config):
            return [Hostile(), Lines()] if "{hook}".endswith("capabilities") else [(Lines(), list, print)]
    """)
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest()
    assert result.ret == USAGE_ERROR
    _clean(result)
    err = result.stderr.str()
    assert f"ERROR: trtcap: hook {hook}" in err
    assert "\nERROR: forged" not in err


AMBIGUOUS_STATE = """
class Ambiguous:  # what numpy arrays and torch tensors do: an elementwise != whose truth value is refused
    def __bool__(self):
        raise ValueError("The truth value of an array with more than one element is ambiguous")


class Weights:
    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return Ambiguous()

    __ne__ = __eq__


STORE = {"w": Weights(1)}


def pytest_trtcap_isolated_state(config):
    return [("weights", lambda: dict(STORE), lambda saved: (STORE.clear(), STORE.update(saved)))]
"""


def test_an_isolated_state_snapshot_that_cannot_be_compared_is_an_error_naming_the_hook_and_label(
        pytester: pytest.Pytester) -> None:
    """A snapshot holding arrays or tensors cannot be compared with ``!=``: the error says so, naming the hook, the
    entry's label and its file, instead of a bare error from inside isolation."""
    conftest = pytester.makeconftest(AMBIGUOUS_STATE)
    pytester.makepyfile("from conftest import STORE, Weights\n\n"
                        "def test_a():\n    STORE['w'] = Weights(2)\n\ndef test_b():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    output = result.stdout.str()
    assert "INTERNALERROR" not in output and result.ret == pytest.ExitCode.TESTS_FAILED, output
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_a*"])
    result.stdout.fnmatch_lines([
        "trtcap: hook pytest_trtcap_isolated_state in *conftest.py: entry 'weights': "
        "its snapshots cannot be compared with != (ValueError('The truth value of an array with more than one "
        "element is ambiguous'))*",
    ])
    assert str(conftest) in output
