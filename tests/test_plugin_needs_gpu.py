"""``--trtcap-needs-gpu {fail,skip}`` as a user sees it: outcomes, skip reasons, the header and the summary.

The suites run with the real torch on this host, which has no CUDA device: every "needs a GPU" failure here is
one torch really raises. Runs are inline (``pytester.runpytest``), except under xdist.
"""

from __future__ import annotations

from typing import Dict

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


def _outcomes(result: pytest.RunResult) -> Dict[str, str]:
    """nodeid -> outcome as pytest counts it (a failed or skipped setup decides; xfail reported as such)."""
    out: Dict[str, str] = {}
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
