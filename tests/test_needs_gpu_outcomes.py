"""``--trtcap-needs-gpu {fail,skip}`` as a user sees it: outcomes, skip reasons, the header and the summary.

The suites run with the real torch on this host, which has no CUDA device: every "needs a GPU" failure here is
one torch really raises. Runs are inline (``pytester.runpytest``), except under xdist.
"""

from __future__ import annotations

import pytest

from trtcap_guards import targets as guard_targets

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="needs a host without a CUDA device")

PREFIX = "trtcap: needs a GPU: "

SUITE = '''
import unittest

import pytest
import torch


def test_moves_to_cuda():
    torch.zeros(1, device="cuda")


def test_cuda_only_kernel():
    q = torch.randn(1, 2, 4, 8)
    torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_param(device):
    torch.ones(2, device=device)


def test_own_assertion():
    assert torch.ones(1).item() == 2


def test_assertion_while_handling_a_device_error():
    try:
        torch.zeros(1, device="cuda")
    except RuntimeError:
        assert False, "wanted a device"


def test_same_text_raised_by_the_test():
    raise RuntimeError("Found no NVIDIA driver on your system")


@pytest.mark.xfail(reason="known to need a device")
def test_xfail_needing_a_device():
    torch.zeros(1, device="cuda")


class TestSetUp(unittest.TestCase):
    def setUp(self):
        self.x = torch.ones(1).cuda()

    def test_a(self):
        pass


class TestSetUpClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.cuda.synchronize()

    def test_b(self):
        pass

    def test_c(self):
        pass


class TestMethods(unittest.TestCase):
    def test_method_needs_a_gpu(self):
        torch.randn(2).to("cuda")

    def test_method_fails(self):
        self.assertEqual(len(torch.ones(3)), 2)
'''

MODULE_QUERYING_THE_DEVICE = '''
import unittest

import torch


class TestAmpere(unittest.TestCase):
    @unittest.skipIf(torch.cuda.get_device_properties(torch.cuda.current_device()).major < 8, "needs Ampere")
    def test_x(self):
        pass
'''

NEEDS_GPU = {
    "test_suite.py::test_moves_to_cuda": "setup-or-call",
    "test_suite.py::test_cuda_only_kernel": "call",
    "test_suite.py::test_param[cuda]": "call",
    "test_suite.py::TestSetUp::test_a": "call",
    "test_suite.py::TestSetUpClass::test_b": "setup",
    "test_suite.py::TestSetUpClass::test_c": "setup",
    "test_suite.py::TestMethods::test_method_needs_a_gpu": "call",
}
FAILS = {
    "test_suite.py::test_own_assertion",
    "test_suite.py::test_assertion_while_handling_a_device_error",
    "test_suite.py::test_same_text_raised_by_the_test",
    "test_suite.py::TestMethods::test_method_fails",
}
PASSES = {"test_suite.py::test_param[cpu]"}
XFAILS = {"test_suite.py::test_xfail_needing_a_device"}
MODULE = "test_module_queries_device.py"


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_suite=SUITE, test_module_queries_device=MODULE_QUERYING_THE_DEVICE)
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """nodeid -> outcome as pytest counts it (a failed or skipped setup decides; xfail reported as such)."""
    out: dict[str, str] = {}
    for rep in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        if hasattr(rep, "wasxfail"):
            out[rep.nodeid] = "xfailed"
        elif (rep.when == "setup" and not rep.passed) or (rep.when == "call" and rep.nodeid not in out):
            out[rep.nodeid] = rep.outcome
    for rep in result.reprec.getreports("pytest_collectreport"):  # type: ignore[attr-defined]
        if not rep.passed:
            out[rep.nodeid] = rep.outcome
    return out


def _line(pytester: pytest.Pytester, name: str, snippet: str) -> int:
    """1-based line of the first line of ``name`` (as written) that contains ``snippet``."""
    lines = (pytester.path / name).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if snippet in line)


def _skip_lines(result: pytest.RunResult) -> list:
    return [line for line in result.outlines if line.startswith("SKIPPED [")]


def test_skip_turns_exactly_the_failures_that_need_a_gpu_into_skips(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--trtcap-needs-gpu", "skip", "-rA")
    outcomes = _outcomes(result)
    assert {n for n, o in outcomes.items() if o == "skipped"} == set(NEEDS_GPU) | {MODULE}
    assert {n for n, o in outcomes.items() if o == "failed"} == FAILS
    assert {n for n, o in outcomes.items() if o == "passed"} == PASSES
    assert {n for n, o in outcomes.items() if o == "xfailed"} == XFAILS
    result.assert_outcomes(passed=1, failed=4, skipped=8, xfailed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # Each skip names the test's own line and the error's first line, after the stable prefix.
    lines = _skip_lines(result)
    at = {snippet: _line(suite, "test_suite.py", snippet) for snippet in (
        "torch.zeros(1, device=", "_scaled_dot_product_efficient_attention", "torch.ones(1).cuda()",
        "torch.cuda.synchronize()")}
    cuda, kernel = at["torch.zeros(1, device="], at["_scaled_dot_product_efficient_attention"]
    assert any(line.startswith(f"SKIPPED [1] test_suite.py:{cuda}: {PREFIX}test_suite.py:{cuda}: RuntimeError: "
                               "Found no NVIDIA driver on your system.")
               and line.endswith(" (signature: cuda-init)") for line in lines), lines
    assert f"SKIPPED [1] test_suite.py:{kernel}: {PREFIX}test_suite.py:{kernel}: NotImplementedError: Could not run " \
           "'aten::_scaled_dot_product_efficient_attention' with arguments from the 'CPU' backend. " \
           "(signature: cuda-only-kernel)" in lines
    module_line = _line(suite, MODULE, "@unittest.skipIf")
    assert any(f"{MODULE}:{module_line}: {PREFIX}{MODULE}:{module_line}: RuntimeError: Found no NVIDIA driver"
               in line for line in lines), lines
    set_up, set_up_class = at["torch.ones(1).cuda()"], at["torch.cuda.synchronize()"]
    assert any(f"[1] test_suite.py:{set_up}: {PREFIX}test_suite.py:{set_up}: RuntimeError" in line for line in lines)
    assert any(f"[2] test_suite.py:{set_up_class}: {PREFIX}test_suite.py:{set_up_class}: RuntimeError" in line
               for line in lines)
    assert len(lines) == 7, lines
    # Counted apart in the trtcap summary.
    result.stdout.fnmatch_lines(["needs a GPU: 8 (cuda-init: 7, cuda-only-kernel: 1)"])


def test_fail_is_the_default_and_changes_nothing(suite: pytest.Pytester) -> None:
    for args in ([], ["--trtcap-needs-gpu", "fail"]):
        result = suite.runpytest(*args, "-rA", "--continue-on-collection-errors")
        outcomes = _outcomes(result)
        assert {n for n, o in outcomes.items() if o == "failed"} == set(NEEDS_GPU) | FAILS | {MODULE}
        result.assert_outcomes(passed=1, failed=9, xfailed=1, errors=3)  # setUpClass: two setup errors
        assert not [line for line in result.outlines if PREFIX in line or line.startswith("needs a GPU")]
        result.stdout.fnmatch_lines(["*ERROR collecting test_module_queries_device.py*"])


def test_a_module_querying_the_device_hides_every_test_unless_skipped(suite: pytest.Pytester) -> None:
    failed = suite.runpytest()
    assert failed.ret == pytest.ExitCode.INTERRUPTED
    failed.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])
    skipped = suite.runpytest("--trtcap-needs-gpu", "skip")
    assert skipped.ret == pytest.ExitCode.TESTS_FAILED  # the real failures; the session ran
    skipped.assert_outcomes(passed=1, failed=4, skipped=8, xfailed=1)


@pytest.mark.parametrize("where", ["env", "ini"])
def test_env_and_ini_forms(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    if where == "env":
        monkeypatch.setenv("TRTCAP_NEEDS_GPU", "skip")
        shown = "from TRTCAP_NEEDS_GPU"
    else:
        suite.makeini("[pytest]\ntrtcap_needs_gpu = skip\n")
        shown = "from ini trtcap_needs_gpu"
    result = suite.runpytest("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4, skipped=8, xfailed=1)
    result.stdout.fnmatch_lines([f"trtcap: needs a GPU: skip ({shown}; *"])


def test_command_line_wins_over_environment(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRTCAP_NEEDS_GPU", "skip")
    result = suite.runpytest("--trtcap-needs-gpu", "fail", "-v", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, failed=9, xfailed=1, errors=3)
    result.stdout.fnmatch_lines(["trtcap: needs a GPU: fail (from --trtcap-needs-gpu; a failure for want of a "
                                 "CUDA device stays a failure)"])


def test_header_without_a_device(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import torch")
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest("--trtcap-needs-gpu", "skip", "-v")
    result.stdout.fnmatch_lines(["trtcap: needs a GPU: skip (from --trtcap-needs-gpu; no CUDA device: a failure "
                                 "that needs one is skipped)"])


@pytest.mark.trtcap_no_isolation  # sets the host probe's memo in its body; monkeypatch puts it back afterwards
def test_on_a_host_with_a_device_the_setting_does_nothing(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host probe's memo is the seam: it says an 8.9 device exists, so no failure is the device's."""
    monkeypatch.setattr(guard_targets, "_host", ((8, 9),))
    result = suite.runpytest("--trtcap-needs-gpu", "skip", "-v", "--continue-on-collection-errors")
    result.stdout.fnmatch_lines(["trtcap: needs a GPU: skip (from --trtcap-needs-gpu) does nothing: a CUDA device "
                                 "exists (8.9)"])
    result.assert_outcomes(passed=1, failed=9, xfailed=1, errors=3)
    assert not _skip_lines(result) and not any(line.startswith("needs a GPU:") for line in result.outlines)


def test_exitfirst_does_not_stop_at_a_skip(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--trtcap-needs-gpu", "skip", "-x", "test_suite.py")
    outcomes = _outcomes(result)
    assert outcomes["test_suite.py::test_moves_to_cuda"] == "skipped"
    assert outcomes["test_suite.py::test_own_assertion"] == "failed"  # the first real failure stops the run
    assert "test_suite.py::test_assertion_while_handling_a_device_error" not in outcomes


def test_warnings_as_errors(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--trtcap-needs-gpu", "skip", "-W", "error", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=4, skipped=8, xfailed=1)


def test_under_xdist(suite: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    result = suite.runpytest_subprocess("--trtcap-needs-gpu", "skip", "-n", "2", "-rs", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=4, skipped=8, xfailed=1)
    result.stdout.fnmatch_lines(["needs a GPU: 8 (cuda-init: 7, cuda-only-kernel: 1)"])
    assert sum(PREFIX in line for line in _skip_lines(result)) == 7


FIXTURES = '''
import pytest
import torch


@pytest.fixture(scope="module")
def cuda_model():
    return torch.nn.Linear(2, 2).cuda()


@pytest.fixture
def finalizer_on_cuda():
    yield
    torch.cuda.synchronize()


@pytest.fixture(scope="session")
def cpu_tensor():
    return torch.ones(2)


def test_first_user(cuda_model):
    pass


def test_second_user(cuda_model):
    pass


def test_cpu_only(cpu_tensor):
    assert cpu_tensor.sum().item() == 2


def test_finalizer_needs_a_gpu(finalizer_on_cuda):
    pass
'''


def test_fixtures_of_every_scope(pytester: pytest.Pytester) -> None:
    """A module-scoped fixture that needs a GPU skips each test using it (its cached error is re-raised for the
    second); a fixture finalizer that needs one stays a teardown error: only setup and call are converted."""
    pytester.makepyfile(test_scopes=FIXTURES)  # not test_fixtures: that module of ours is imported
    result = pytester.runpytest("--trtcap-needs-gpu", "skip", "-rA", "-vv")  # -vv: the ERROR line's message whole
    outcomes = _outcomes(result)
    assert outcomes["test_scopes.py::test_first_user"] == "skipped"
    assert outcomes["test_scopes.py::test_second_user"] == "skipped"
    assert outcomes["test_scopes.py::test_cpu_only"] == "passed"
    result.assert_outcomes(passed=2, skipped=2, errors=1)  # the finalizer test passes, then errors in teardown
    result.stdout.fnmatch_lines(["ERROR test_scopes.py::test_finalizer_needs_a_gpu - RuntimeError: Found no *"])
    line = _line(pytester, "test_scopes.py", "torch.nn.Linear(2, 2).cuda()")
    assert [s for s in _skip_lines(result) if f"test_scopes.py:{line}: {PREFIX}test_scopes.py:{line}: " in s]


def test_a_conftest_that_needs_a_gpu_is_still_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("import torch\n\nMAJOR = torch.cuda.get_device_properties(0).major\n")
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest_subprocess("--trtcap-needs-gpu", "skip", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ImportError while loading conftest*", "*RuntimeError: Found no NVIDIA driver*"])


def test_pdb_does_not_stop_at_a_skip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pdb='''
import torch


def test_needs_a_gpu():
    torch.zeros(1, device="cuda")


def test_fails():
    assert 1 == 2
''')
    result = pytester.runpytest_subprocess("--trtcap-needs-gpu", "skip", "--pdb", "-p", "no:randomly")
    result.assert_outcomes(skipped=1, failed=1)
    entered = [line for line in result.outlines if "entering PDB" in line]
    assert len(entered) == 1, result.outlines  # for the real failure only
    assert "test_fails" in "\n".join(result.outlines[result.outlines.index(entered[0]):])


def test_a_tests_own_skip_with_our_prefix_is_not_counted(pytester: pytest.Pytester) -> None:
    """Only the plugin's conversions are counted: text cannot forge the summary."""
    pytester.makepyfile(test_forge='''
import pytest
import torch


def test_forged_skip():
    pytest.skip("trtcap: needs a GPU: forged.py:1: RuntimeError: nothing (signature: cuda-init)")


def test_real():
    torch.zeros(1, device="cuda")
''')
    result = pytester.runpytest("--trtcap-needs-gpu", "skip")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["needs a GPU: 1 (cuda-init: 1)"])


HANDLED_BY_THE_TEST = '''
import pytest
import torch
from torch import nn

from project_helpers import model_on_the_device, model_on_the_device_or_explain


def test_fallback_shape_bug():
    model = nn.Linear(4, 2)
    try:
        model = model.cuda()
    except RuntimeError:
        model(torch.ones(3, 5))            # a genuine shape bug on the CPU path


def test_fallback_numeric_bug():
    try:
        torch.ones(3, device="cuda")
    except RuntimeError:
        torch.testing.assert_close(torch.ones(3) * 2, torch.ones(3))


def test_conftest_helpers_fallback_bug(to_the_device):
    to_the_device(nn.Linear(4, 2))


def test_project_helpers_fallback_bug():
    model_on_the_device(nn.Linear(4, 2))


def test_plain_cuda():
    nn.Linear(4, 2).cuda()


def test_explicit_cause():
    try:
        torch.ones(3, device="cuda")
    except RuntimeError as e:
        raise ValueError("could not set up the model") from e


def test_project_helpers_explicit_cause():
    model_on_the_device_or_explain(nn.Linear(4, 2))
'''

HANDLING_HELPER = '''
import torch


def model_on_the_device(model):
    """A project helper whose own except runs a CPU fallback with a bug in it."""
    try:
        return model.cuda()
    except RuntimeError:
        return model(torch.ones(3, 5))


def model_on_the_device_or_explain(model):
    """A project helper that names the device error as the cause of its own."""
    try:
        return model.cuda()
    except RuntimeError as e:
        raise LookupError("this model needs its device") from e
'''

CONFTEST_HELPER = HANDLING_HELPER + '''

import pytest


@pytest.fixture
def to_the_device():
    return model_on_the_device
'''

IMPORT_HANDLED_BY_THE_MODULE = '''
import torch

try:
    MAJOR = torch.cuda.get_device_capability()[0]
except RuntimeError:
    LAYER = torch.nn.Linear(4, -1)


def test_never_collected():
    pass
'''


def test_a_failure_raised_while_the_tests_own_except_handles_a_device_error_stays_a_failure(
    pytester: pytest.Pytester,
) -> None:
    """Only the library's own ``except`` makes the device error count through the chain: the test's, its
    conftest's or project's helper's and its module's ``except`` running into a genuine bug, or raising an error of
    their own ``from`` it, are failures (and a collection error), while a plain device error is still skipped."""
    pytester.makeconftest(CONFTEST_HELPER)
    pytester.makepyfile(test_handled=HANDLED_BY_THE_TEST, test_import_handled=IMPORT_HANDLED_BY_THE_MODULE,
                        project_helpers=HANDLING_HELPER)
    # A subprocess: where torch_tensorrt was imported before, the guards answer the module's device query.
    result = pytester.runpytest_subprocess("--trtcap-needs-gpu", "skip", "-rA", "-vv", "-p", "no:randomly",
                                           "--continue-on-collection-errors")
    outcomes = dict(line.split()[:2] for line in result.outlines if line.startswith("test_handled.py::"))
    assert outcomes == {
        "test_handled.py::test_fallback_shape_bug": "FAILED",
        "test_handled.py::test_fallback_numeric_bug": "FAILED",
        "test_handled.py::test_conftest_helpers_fallback_bug": "FAILED",
        "test_handled.py::test_project_helpers_fallback_bug": "FAILED",
        "test_handled.py::test_plain_cuda": "SKIPPED",
        "test_handled.py::test_explicit_cause": "FAILED",
        "test_handled.py::test_project_helpers_explicit_cause": "FAILED",
    }, result.outlines
    result.assert_outcomes(failed=6, skipped=1, errors=1)
    result.stdout.fnmatch_lines([  # each error as it is: the collection error first, then the failures in order
        "*ERROR collecting test_import_handled.py*",
        "E *RuntimeError: Trying to create tensor with negative dimension*",
        "*test_fallback_shape_bug*", "E *RuntimeError: mat1 and mat2 shapes cannot be multiplied*",
        "*test_fallback_numeric_bug*", "E *AssertionError: Tensor-likes are not close!*",
        "*test_explicit_cause*", "E *ValueError: could not set up the model*",
        "*test_project_helpers_explicit_cause*", "E *LookupError: this model needs its device*",
    ])
    result.stdout.fnmatch_lines(["needs a GPU: 1 (cuda-init: 1)"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


UNITTEST_SEVERAL_ERRORS = '''
import unittest

import torch


class TestTearDownFails(unittest.TestCase):
    def tearDown(self):
        self.assertEqual(len(torch.ones(3)), 2)

    def test_needs_a_gpu(self):
        torch.ones(1).cuda()


class TestCleanupFails(unittest.TestCase):
    def setUp(self):
        self.addCleanup(lambda: self.assertEqual(len(torch.ones(4)), 2))
        torch.ones(1).cuda()

    def test_never_runs(self):
        pass


class TestEveryErrorNeedsAGpu(unittest.TestCase):
    def tearDown(self):
        torch.cuda.synchronize()

    def test_needs_a_gpu(self):
        torch.zeros(1, device="cuda")


class TestSubTests(unittest.TestCase):
    def test_subtests(self):
        with self.subTest("cpu"):
            self.assertEqual(len(torch.ones(5)), 2)
        with self.subTest("gpu"):
            torch.ones(1).cuda()
'''


def test_a_unittest_test_is_converted_only_when_every_error_it_reports_needs_a_gpu(pytester: pytest.Pytester) -> None:
    """unittest runs the body, ``tearDown`` and the cleanups in one go; pytest reports the first error in the call
    and keeps the others on the item. A genuine failure among them keeps the call a failure; a teardown error
    stays an error as always. (Whatever the pytest version: 8.x ends a test at its first failing subTest, 9.x
    reports each subTest apart.)"""
    pytester.makepyfile(test_unittest_errors=UNITTEST_SEVERAL_ERRORS)
    result = pytester.runpytest("--trtcap-needs-gpu", "skip", "-p", "no:randomly")
    outcomes = _outcomes(result)
    assert outcomes["test_unittest_errors.py::TestTearDownFails::test_needs_a_gpu"] == "failed"
    assert outcomes["test_unittest_errors.py::TestCleanupFails::test_never_runs"] == "failed"
    assert outcomes["test_unittest_errors.py::TestEveryErrorNeedsAGpu::test_needs_a_gpu"] == "skipped"
    failed = [(rep.nodeid.split("::", 1)[1], rep.when, rep.longreprtext)
              for rep in result.reprec.getreports("pytest_runtest_logreport") if rep.failed]  # type: ignore[attr-defined]

    def failed_with(test: str, when: str, error: str) -> bool:
        return any(name == test and at == when and error in text for name, at, text in failed)

    assert failed_with("TestTearDownFails::test_needs_a_gpu", "call", "RuntimeError: Found no NVIDIA driver")
    assert failed_with("TestCleanupFails::test_never_runs", "call", "RuntimeError: Found no NVIDIA driver")
    # Each later error is reported in teardown, as without the setting.
    assert failed_with("TestTearDownFails::test_needs_a_gpu", "teardown", "AssertionError: 3 != 2")
    assert failed_with("TestCleanupFails::test_never_runs", "teardown", "AssertionError: 4 != 2")
    assert failed_with("TestEveryErrorNeedsAGpu::test_needs_a_gpu", "teardown", "RuntimeError: Found no NVIDIA driver")
    assert failed_with("TestSubTests::test_subtests", "call", "AssertionError: 5 != 2")  # 9.x: a subtest's report
