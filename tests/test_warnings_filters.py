"""Every warning the plugin issues is safe under any warnings filter: ``-W error``, ``filterwarnings = error``.

A leak reported as a warning that a filter turns into an exception must not stop pytest from tearing the
leaking test down (else the next, innocent test errors with "previous item was not torn down properly").
"""

from __future__ import annotations

import pytest

LEAKING_SUITE = '''
import pytest
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

import torch

BASE = list(ATOMIC_SUBGRAPHS)


class Leaked(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)


@pytest.fixture
def noted(request):
    yield
    # the leaking test's own finalizer: must run whatever the warnings filter says
    (request.config.rootpath / "finalizer-ran").write_text("yes")


def test_1_leaks(noted):
    register_atomic_subgraph(init_args=(), is_core_aten=True)(Leaked)


def test_2_innocent_sees_restored_state():
    assert ATOMIC_SUBGRAPHS == BASE
'''

LEAK = "added ATOMIC_SUBGRAPHS entry (Leaked, (), True)"


def _check_leaker_errored_and_next_passed(result: pytest.RunResult) -> None:
    """The error is printed under its public name, the one a filter or an ``except`` uses, whatever module of the
    plugin defines it (a move inside the plugin must not change a failure's text, and so its ``trtcap`` signature)."""
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "ERROR test_leaks.py::test_1_leaks - pytest_trtcap.TrtcapLeakError: trtcap: test_leaks.py::test_1_leaks "
        f"leaked global state (TrtcapLeakWarning is an error under the warnings filter): {LEAK}",
    ])
    output = result.stdout.str()
    assert "not torn down properly" not in output
    assert "INTERNALERROR" not in output
    assert "test_2_innocent_sees_restored_state FAILED" not in output


@pytest.mark.parametrize("how", ["-W error", "ini filterwarnings = error"])
def test_a_leak_under_warnings_as_errors_errors_the_leaker_only(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(test_leaks=LEAKING_SUITE)
    args = ["-p", "no:cacheprovider", "-rE", "-vv"]  # -vv: the ERROR line whole at any width
    if how == "-W error":
        args += ["-W", "error", "-W", "ignore::DeprecationWarning", "-W", "ignore::FutureWarning"]
    else:
        pytester.makeini(
            "[pytest]\nfilterwarnings =\n    error\n    ignore::DeprecationWarning\n    ignore::FutureWarning\n"
        )
    result = pytester.runpytest_subprocess(*args, "--trt-target-sm", "8.9")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _check_leaker_errored_and_next_passed(result)
    assert (pytester.path / "finalizer-ran").read_text() == "yes", "the leaking test's finalizer did not run"
    result.stdout.fnmatch_lines(["*- trtcap -*", "leaks: 1 test left global state changed (restored)"])


@pytest.mark.parametrize("where", ["pytest_trtcap", "trtcap_guards"])
def test_the_unsupported_target_warning_can_be_named_through_either_package(pytester: pytest.Pytester,
                                                                           where: str) -> None:
    """Both packages export it: a filter naming the plugin's package works like one naming the guards'."""
    pytester.makepyfile("def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "9.0",
                                           "-W", f"error::{where}.UnsupportedTargetWarning")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*trtcap: --trt-target-sm*9.0*UnsupportedTargetWarning is an error under the "
                                 "warnings filter*"])
