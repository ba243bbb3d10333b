"""Dormant until used, attacked from outside: sessions that wake late (in a fixture of a wider scope, in
``setUpClass``) and sessions whose markers arrive after collection reports. Behaviour through pytester, on what a
user sees (outcomes, the ``trtcap`` summary, warnings)."""

from __future__ import annotations

import pytest

RUN = ("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")

#: Tests that run after the first use, in a later module: they must find the guards as they start.
AFTER = """
import trtcap_guards as guards

def test_after_1():
    assert guards.capability_decision(probe_host=False).targets == ()

def test_after_2():
    assert guards.capability_decision(probe_host=False).targets == ()
"""

#: The first change of the guards' state, made by a fixture wider than a test that undoes it in its teardown.
FIRST_USE_IN_A_WIDE_FIXTURE = {
    "module fixture": """
import pytest
import trtcap_guards as guards

@pytest.fixture(scope="module")
def on_turing():
    with guards.declare_targets("7.5", origin="module fixture"):
        yield

def test_1(on_turing):
    assert guards.capability_decision().targets_turing

def test_2(on_turing):
    assert guards.capability_decision().targets_turing
""",
    "class fixture": """
import pytest
import trtcap_guards as guards

class TestOnTuring:
    @pytest.fixture(scope="class", autouse=True)
    def on_turing(self):
        with guards.declare_targets("7.5", origin="class fixture"):
            yield

    def test_1(self):
        assert guards.capability_decision().targets_turing

    def test_2(self):
        assert guards.capability_decision().targets_turing
""",
    "setUpClass": """
import unittest
import trtcap_guards as guards

class TestOnTuring(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.declared = guards.declare_targets("7.5", origin="setUpClass")
        cls.declared.__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.declared.__exit__(None, None, None)

    def test_1(self):
        assert guards.capability_decision().targets_turing

    def test_2(self):
        assert guards.capability_decision().targets_turing
""",
}


@pytest.mark.parametrize("where", sorted(FIRST_USE_IN_A_WIDE_FIXTURE))
def test_a_wide_fixture_that_first_uses_the_guards_and_cleans_up_is_no_leak(pytester: pytest.Pytester,
                                                                            where: str) -> None:
    """Woken in a test's setup by a fixture that outlives that test: its own clean-up, in a later test's teardown,
    is neither a leak of the next test nor undone by a 'restore' that would declare its targets again."""
    pytester.makepyfile(test_a_first=FIRST_USE_IN_A_WIDE_FIXTURE[where], test_b_after=AFTER)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=4)
    assert "leaked" not in result.stdout.str()


TURING_HOST_CONFTEST = """
import pytest
import torch

# the host's one CUDA device is a Turing GPU (this machine has none): what the guards probe when nothing declares
torch.cuda.is_available = lambda: True
torch.cuda.device_count = lambda: 1
torch.cuda.get_device_capability = lambda index=0: (7, 5)

def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.trt_fp32_gemm)
"""


def test_a_marker_added_in_collection_modifyitems_skips_in_a_session_that_sets_nothing(
    pytester: pytest.Pytester,
) -> None:
    """No test carries a marker when its collector reports; a conftest adds it afterwards. On a Turing host the
    test must still be skipped, as it is when the marker is written on the test."""
    pytester.makeconftest(TURING_HOST_CONFTEST)
    pytester.makepyfile("def test_gemm():\n    pass\n")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 (targets 7.5 from host*"])


FIRST_USE_IN_SETUP_THEN_A_LEAK_IN_THE_BODY = {
    "conftest.py": """
import pytest
import trtcap_guards as guards

@pytest.fixture(scope="session")
def on_turing():
    with guards.declare_targets("7.5", origin="session fixture"):
        yield
""",
    "test_body.py": """
import trtcap_guards as guards

def test_leaks_in_its_body(on_turing):
    guards.declare_backend("standard", origin="a leaky body")

def test_after_it(on_turing):
    assert guards.capability_decision().backend_origin != "a leaky body"
""",
}


@pytest.mark.parametrize("settings", [
    pytest.param(("--trtcap-guards", "on"), id="a setting given"),
    pytest.param((), id="nothing given"),
])
def test_a_body_leak_after_a_fixture_woke_the_session_is_named(pytester: pytest.Pytester, settings: tuple) -> None:
    """Whether a setting is given must not decide whether a test body's leak is named and undone."""
    pytester.makepyfile(**FIRST_USE_IN_SETUP_THEN_A_LEAK_IN_THE_BODY)
    result = pytester.runpytest_subprocess(*RUN, *settings)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_leaks_in_its_body -> guards: declared backend standard (from a leaky body)*"])


def test_an_ill_shaped_state_hook_in_a_subfolder_conftest_is_a_usage_error_where_nothing_is_given(
    pytester: pytest.Pytester,
) -> None:
    """Found during collection, the hook wakes the session once collection is done: its result is still checked
    before the first test, a usage error (exit 4) naming the hook and file, not an error of every test."""
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(
        "def pytest_trtcap_isolated_state(config):\n    return ('cache', lambda: 1, lambda saved: None)\n")
    (sub / "test_it.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(["*trtcap: hook pytest_trtcap_isolated_state in *conftest.py: expected a list*"])


NESTED_OUTER = '''
import trtcap_guards as guards

INNER = """
import trtcap_guards as guards

def test_inner():
    {inner}
"""

def test_runs_a_suite_then_leaks(pytester):
    pytester.makepyfile(test_inner_suite=INNER)
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)
    guards.declare_targets("8.9", origin="outer body")

def test_after():
    assert guards.capability_decision(probe_host=False).targets == ()
'''

@pytest.mark.parametrize("inner", [
    pytest.param("pass", id="inner suite uses nothing"),
    pytest.param('with guards.declare_targets("7.5", origin="inner"):\n        pass', id="inner suite uses the guards"),
])
def test_an_outer_test_that_leaks_after_an_inline_run_is_named(pytester: pytest.Pytester, inner: str) -> None:
    """Isolation holds every test from its setup, in every session: an inline (pytester.runpytest) run that
    overwrites and removes PYTEST_CURRENT_TEST changes nothing."""
    pytester.makeconftest('pytest_plugins = ["pytester"]\n')
    pytester.makepyfile(test_outer=NESTED_OUTER.replace("{inner}", inner))
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_runs_a_suite_then_leaks -> guards: declared targets 8.9 (from outer body)*"])


def test_an_outer_test_that_leaks_after_an_inline_run_is_named_where_a_setting_is_given(
    pytester: pytest.Pytester,
) -> None:
    """The same suite, active from the start: the outer test is held from its setup, and its leak is named."""
    pytester.makeconftest('pytest_plugins = ["pytester"]\n')
    pytester.makepyfile(test_outer=NESTED_OUTER.replace("{inner}", "pass"))
    result = pytester.runpytest_subprocess(*RUN, "--trtcap-guards", "on")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_runs_a_suite_then_leaks -> guards: declared targets 8.9 (from outer body)*"])


LONGER_FIXTURE_STARTED_AFTER_THE_WAKE = {
    "conftest.py": """
import pytest
import trtcap_guards as guards

@pytest.fixture(scope="session")
def backend():
    with guards.declare_backend("rtx", origin="session fixture"):
        yield
""",
    "test_a_first.py": """
import pytest
import trtcap_guards as guards

@pytest.fixture(scope="module")
def on_turing():
    with guards.declare_targets("7.5", origin="module fixture"):
        yield

def test_1(on_turing):
    pass

def test_2(on_turing, backend):
    pass
""",
    "test_b_after.py": """
import trtcap_guards as guards

def test_after_1(backend):
    assert guards.capability_decision(probe_host=False).targets == ()

def test_after_2(backend):
    assert guards.capability_decision(probe_host=False).targets == ()
""",
}


def test_a_longer_fixture_started_after_the_wake_is_not_blamed_for_the_clean_up_of_the_one_that_woke_it(
    pytester: pytest.Pytester,
) -> None:
    """A module fixture wakes the session; a session fixture starts later, alive across that module's end. The
    module fixture's clean-up is not the session fixture's leak (nor undone when the session fixture ends)."""
    pytester.makepyfile(**LONGER_FIXTURE_STARTED_AFTER_THE_WAKE)
    for given in (("--trtcap-strict",), ()):  # active from configure (the control), then woken by the fixture
        result = pytester.runpytest_subprocess(*RUN, *given)
        result.assert_outcomes(passed=4)
        assert "leaked" not in result.stdout.str(), given



def test_a_fixture_started_after_the_wake_that_leaks_in_its_teardown_is_still_named(pytester: pytest.Pytester) -> None:
    """The fixture that woke the session ends first and cleans up; a session fixture started after the wake, that
    left the guards alone in its setup, is still checked at its end, against the state after that clean-up."""
    files = dict(LONGER_FIXTURE_STARTED_AFTER_THE_WAKE)
    files["conftest.py"] = (
        "import pytest\nimport trtcap_guards as guards\n\n@pytest.fixture(scope='session')\ndef backend():\n"
        "    yield\n    guards.declare_backend('standard', origin='session teardown')\n")
    pytester.makepyfile(**files)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*(fixture 'backend', session scope, set up for test_a_first.py::test_2) -> guards: "
                                 "declared backend standard (from session teardown), was none"])
    assert "declared targets" not in result.stdout.str()


@pytest.mark.parametrize("given", [(), ("--trtcap-strict",)], ids=["nothing given", "a setting given"])
@pytest.mark.xfail(strict=True, reason=(
    "markers are read in pytest_runtest_setup before any fixture is set up (woken or not), so a marker a fixture "
    "applies with request.applymarker is never seen; reading them again before the call would fix it"))
def test_a_marker_applied_by_a_fixture_skips(pytester: pytest.Pytester, given: tuple) -> None:
    pytester.makeconftest(TURING_HOST_CONFTEST.split("def pytest_collection_modifyitems")[0])
    pytester.makepyfile("import pytest\n\n@pytest.fixture(autouse=True)\ndef gemm(request):\n"
                        "    request.applymarker(pytest.mark.trt_fp32_gemm)\n\ndef test_gemm():\n    pass\n")
    result = pytester.runpytest_subprocess(*RUN, *given)
    result.assert_outcomes(skipped=1)


@pytest.mark.parametrize("given", [(), ("--trt-target-sm", "8.9")], ids=["nothing given", "a setting given"])
def test_a_marker_with_arguments_added_in_collection_modifyitems_errors_naming_the_test(
    pytester: pytest.Pytester, given: tuple
) -> None:
    """Collected with arguments, a marker fails its module's collection; added after the collectors reported, the
    test errors at setup with the same message, instead of the arguments being dropped without a word."""
    pytester.makeconftest("import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n"
                          "        item.add_marker(pytest.mark.trt_bf16('why', strict=True))\n")
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess(*RUN, *given)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*trtcap: test_*.py::test_one: @pytest.mark.trt_bf16 takes no arguments, got "
                                 "('why', strict=True)*"])


# --- held up under attack: kept as regressions -----------------------------------------------------------------

ODD_IDS = """
import pytest
import trtcap_guards as guards

@pytest.mark.parametrize("x", ["a (call) b", "c (setup)", "d (teardown)", "e "])
def test_odd(x):
    if x.startswith(("a", "c")):
        guards.declare_targets("8.9", origin=f"odd id {x}")

def test_sees_nothing():
    assert guards.capability_decision(probe_host=False).targets == ()
"""


def test_a_body_that_wakes_the_session_is_held_whatever_its_parametrize_id_says(pytester: pytest.Pytester) -> None:
    """``PYTEST_CURRENT_TEST`` ends with the phase; ids holding a phase's text or spaces do not confuse it."""
    pytester.makepyfile(ODD_IDS)
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines([
        "*test_odd[[]a (call) b] -> guards: declared targets 8.9 (from odd id a (call) b), were none",
        "*test_odd[[]c (setup)] -> guards: declared targets 8.9 (from odd id c (setup)), were none"])


def test_a_test_interrupted_after_waking_the_session_is_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import trtcap_guards as guards\n\ndef test_interrupted():\n"
                        "    guards.declare_targets('8.9', origin='interrupted')\n    raise KeyboardInterrupt\n\n"
                        "def test_never():\n    pass\n")
    result = pytester.runpytest_subprocess(*RUN)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*test_interrupted -> guards: declared targets 8.9 (from interrupted), were none "
                                 "(interrupted)"])


def test_markers_on_modules_classes_and_unittest_classes_skip_on_a_turing_host_where_nothing_is_given(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(TURING_HOST_CONFTEST.split("def pytest_collection_modifyitems")[0])
    pytester.makepyfile(
        test_module="import pytest\n\npytestmark = pytest.mark.trt_fp32_gemm\n\ndef test_m():\n    pass\n",
        test_classes="import unittest\nimport pytest\n\n@pytest.mark.trt_conv3d\nclass TestU(unittest.TestCase):\n"
                     "    def test_u(self):\n        pass\n\nclass TestP:\n    pytestmark = [pytest.mark.trt_bf16]\n\n"
                     "    def test_p(self):\n        pass\n")
    result = pytester.runpytest_subprocess(*RUN, "--strict-markers", "-W", "error")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(["capability skips: 3 (*)"])


@pytest.mark.parametrize("where", ["pytest.Module", "pytest.Class"])
def test_a_marker_added_on_the_module_or_class_in_collection_modifyitems_skips_in_a_session_that_sets_nothing(
    pytester: pytest.Pytester, where: str
) -> None:
    """As on the test itself: a marker a conftest adds after collection to the test's module or class must still
    skip on a Turing host, though no test carries it among its own markers."""
    pytester.makeconftest(TURING_HOST_CONFTEST.replace("item.add_marker(", f"item.getparent({where}).add_marker("))
    pytester.makepyfile("class TestGemm:\n    def test_gemm(self):\n        pass\n")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 (targets 7.5 from host*"])


LATE_ARGUMENTS = {
    "on a test that carries the marker bare": (
        "import pytest\n\n@pytest.mark.trt_bf16\ndef test_one():\n    pass\n", "trt_bf16('late')", "('late')"),
    "trtcap_no_isolation": ("def test_one():\n    pass\n", "trtcap_no_isolation(why='late')", "(why='late')"),
    "on the module": ("def test_one():\n    pass\n", "trt_bf16('late')", "('late')"),
}


@pytest.mark.parametrize("given", [(), ("--trt-target-sm", "8.9")], ids=["nothing given", "a setting given"])
@pytest.mark.parametrize("case", list(LATE_ARGUMENTS))
def test_marker_arguments_added_in_collection_modifyitems_error_wherever_the_marker_sits(
    pytester: pytest.Pytester, given: tuple, case: str
) -> None:
    """Written on a test, any of our markers given arguments fails collection; added later, it errors its test
    at setup, whichever of our markers it is and whatever else the test carries."""
    source, mark, shown_args = LATE_ARGUMENTS[case]
    node = "item.getparent(pytest.Module)" if case == "on the module" else "item"
    pytester.makeconftest(f"import pytest\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n"
                          f"        {node}.add_marker(pytest.mark.{mark})\n")
    pytester.makepyfile(test_late=source)
    result = pytester.runpytest_subprocess(*RUN, *given)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*trtcap: test_late.py::test_one: @pytest.mark.{mark.split('(')[0]} takes no "
                                 f"arguments, got {shown_args}*"])


def test_an_in_process_pytester_run_that_declares_targets_is_no_leak_of_the_test_that_runs_it(
    pytester: pytest.Pytester,
) -> None:
    """A project's own plugin test runs a session in process whose conftest names the targets: that session declares
    and undoes them, which wakes the outer one. pytester then drops the guards' modules the inner session loaded, and
    the outer isolation must still find the state as it was, not report a leak nobody made."""
    pytester.makeconftest("pytest_plugins = ['pytester']\n")
    pytester.makepyfile(test_outer="""
def test_runs_a_session_in_process(pytester):
    pytester.makeconftest("def pytest_trtcap_target_capabilities(config):\\n    return '8.9'\\n")
    pytester.makepyfile("def test_one():\\n    pass\\n")
    pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider").assert_outcomes(passed=1)
""")
    result = pytester.runpytest_subprocess(*RUN)
    result.assert_outcomes(passed=1)
    assert "leaked global state" not in result.stdout.str()


def test_a_second_in_process_pytester_run_skips_on_the_targets_its_conftest_names(pytester: pytest.Pytester) -> None:
    """pytester drops the modules an in-process run loaded; the guards' package must not keep answering from the
    dropped copy, or the next in-process session declares its targets where nothing reads them and runs a test
    its markers forbid."""
    pytester.makeconftest("pytest_plugins = ['pytester']\n")
    pytester.makepyfile(test_outer="""
def test_first_run_reads_the_targets(pytester):
    pytester.makepyfile("def test_one():\\n    pass\\n")
    pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider").assert_outcomes(passed=1)

def test_second_run_names_turing(pytester):
    pytester.makeconftest("def pytest_trtcap_target_capabilities(config):\\n    return '7.5'\\n")
    pytester.makepyfile("import pytest\\n\\n@pytest.mark.trt_fp32_gemm\\ndef test_gemm():\\n    pass\\n")
    pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider").assert_outcomes(skipped=1)
""")
    result = pytester.runpytest_subprocess(*RUN, "-q")
    result.assert_outcomes(passed=2)


AFTER_AN_IN_PROCESS_RUN_THAT_LOADED_THE_GUARDS = '''
import trtcap_guards as guards

def test_1_runs_a_session_in_process(pytester):
    pytester.makepyfile("import trtcap_guards as guards\\n\\ndef test_one():\\n"
                        "    with guards.declare_targets('7.5', origin='inner'):\\n        pass\\n")
    pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider").assert_outcomes(passed=1)

def test_2_leaks():
    guards.declare_targets("8.9", origin="outer body")

def test_3_sees_nothing_declared():
    assert guards.capability_decision(probe_host=False).targets == ()
'''


@pytest.mark.parametrize("quiet", [("-q",), ("-p", "no:terminal")])
def test_a_leak_after_an_in_process_run_that_first_loaded_the_guards_is_named_and_undone(
    pytester: pytest.Pytester, quiet: tuple,
) -> None:
    """A quiet outer session (no header: the guards' state modules unloaded) runs a session in process that loads
    them; pytester drops them from ``sys.modules`` afterwards, but the package still held them as attributes. The
    state module imported again at the next hold took those dropped ones (``from . import targets``) and compared
    a state nobody declares into any more: a later test's leak went unnamed and stayed for the test after it."""
    pytester.makeconftest("pytest_plugins = ['pytester']\n")
    pytester.makepyfile(test_outer=AFTER_AN_IN_PROCESS_RUN_THAT_LOADED_THE_GUARDS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", *quiet, "-W",
                                           "error::pytest_trtcap.TrtcapLeakWarning", "--junitxml=outer.xml")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    report = (pytester.path / "outer.xml").read_text()
    assert 'name="test_3_sees_nothing_declared"' in report and "<failure" not in report, report
    assert "test_outer.py::test_2_leaks leaked global state" in report and "declared targets 8.9" in report, report


FILTER_AFTER_AN_IN_PROCESS_RUN = '''
import pytest
import trtcap_guards as guards

def test_1_runs_a_session_in_process(pytester):
    pytester.makepyfile("import trtcap_guards as guards\\n\\ndef test_one():\\n    {inner}\\n")
    pytester.runpytest("-p", "no:randomly", "-p", "no:cacheprovider", "-W",
                       "error::pytest_trtcap.TrtcapLeakWarning").assert_outcomes(passed=1)

@pytest.mark.filterwarnings("error::pytest_trtcap.TrtcapLeakWarning")
def test_2_leaks():
    guards.declare_targets("8.9", origin="outer body")
'''


@pytest.mark.parametrize("inner", [
    pytest.param("pass", id="the inner session names the warning"),
    pytest.param("with guards.declare_targets('7.5', origin='inner'):\\n        pass", id="and wakes the outer one"),
])
def test_a_leak_warning_filter_named_after_an_in_process_run_still_matches_the_warning(
    pytester: pytest.Pytester, inner: str,
) -> None:
    """pytester drops the modules an in-process session loaded, ``pytest_trtcap.isolation`` among them: the class a
    later ``filterwarnings("error::pytest_trtcap.TrtcapLeakWarning")`` names must be the one the outer session
    warns with, whether the package kept the inner session's class, or the outer session woke during the inner
    run (so its hooks hold the dropped module's class): else the leak stays a warning."""
    pytester.makeconftest("pytest_plugins = ['pytester']\n")
    pytester.makepyfile(test_outer=FILTER_AFTER_AN_IN_PROCESS_RUN.replace("{inner}", inner))
    result = pytester.runpytest_subprocess(*RUN, "-q")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["ERROR test_outer.py::test_2_leaks - *TrtcapLeakError*"])


IMPORT_AFTER_A_NESTED_MAIN = """
import pytest

class BodyPattern:
    pass

def test_1_runs_pytest_main_in_process():
    assert pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "inner"]) == 0

def test_2_imports_torch_tensorrt_and_leaks():
    from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import register_atomic_subgraph

    register_atomic_subgraph(init_args=(), is_core_aten=True)(BodyPattern)
"""


@pytest.mark.parametrize("inner", ["pass", "import torch_tensorrt  # noqa: F401"], ids=["inner uses nothing",
                                                                                     "inner imports it"])
def test_a_session_run_by_pytest_main_inside_a_test_leaves_the_outer_import_hook_armed(
    pytester: pytest.Pytester, inner: str,
) -> None:
    """The inner session disarmed every import hook as it ended, the outer session's too: the outer suite's first
    ``import torch_tensorrt`` was then neither answered on a host without CUDA (it failed) nor guarded, and the
    outer session never woke. Where the inner session imported it, the outer one wakes as that session ends."""
    pytester.mkdir("inner").joinpath("test_inner.py").write_text(f"def test_inner():\n    {inner}\n")
    pytester.makepyfile(test_outer=IMPORT_AFTER_A_NESTED_MAIN)
    result = pytester.runpytest_subprocess(*RUN, "test_outer.py")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_2_imports_torch_tensorrt_and_leaks -> added ATOMIC_SUBGRAPHS entry*"])


IMPORTS_AFTER_THE_PLUGIN_CLOSED = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    try:
        import torch_tensorrt  # noqa: F401 - after the plugin closed its session: nothing of it may act now
    except Exception as exc:  # a host without a CUDA device: nobody answers the import's device queries now
        print(f"IMPORT FAILED {type(exc).__name__}")
"""

MAIN_THEN_GUARDS = """
import pytest
import trtcap_guards as guards
pytest.main(["-q", "-s", "-p", "no:cacheprovider", "-p", "no:randomly", "test_one.py"])
print(f"GUARDS INSTALLED AFTER THE RUN {guards.is_installed()}")
"""


def test_a_dormant_session_is_not_woken_after_it_closed(pytester: pytest.Pytester) -> None:
    """A hook that runs after the plugin's ``pytest_unconfigure`` (``trylast``) and imports torch_tensorrt must
    not wake the closed session: the guards it would install are never uninstalled, and outlive ``pytest.main``."""
    pytester.makeconftest(IMPORTS_AFTER_THE_PLUGIN_CLOSED)
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    script = pytester.makepyfile(run_main=MAIN_THEN_GUARDS)
    result = pytester.runpython(script)
    result.stdout.fnmatch_lines(["*1 passed*", "GUARDS INSTALLED AFTER THE RUN False"])


WOKEN_AFTER_A_FINALIZER = """
import trtcap_guards as guards


def test_cleans_up_in_a_finalizer_added_before_waking(request):
    before = guards.state_snapshot(fired=False)
    request.addfinalizer(lambda: guards.restore_state(before))
    guards.declare_targets("8.9", origin="the body")


def test_after():
    assert guards.state_snapshot(fired=False).targets is None
"""


def test_a_finalizer_the_body_added_before_it_woke_the_session_still_cleans_up(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_woken=WOKEN_AFTER_A_FINALIZER)
    result = pytester.runpytest_subprocess(*RUN, "-W", "error::pytest_trtcap.TrtcapLeakWarning")
    result.assert_outcomes(passed=2)
    result.stdout.no_fnmatch_line("*leaks:*")
