"""``--trtcap-needs-gpu skip`` applied to pytest's own reports (``pytest_trtcap.needs_gpu``): a failed setup
or call that needs a GPU becomes the skip pytest would have reported, at the test's line; anything else is left as
it is. The reports are pytest's real ``TestReport`` objects built from real calls on this CPU host; the plugin's
end-to-end behaviour is in test_needs_gpu_outcomes.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from pytest_trtcap import needs_gpu
from trtcap_guards import targets as guard_targets

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="reproduces what a host without a CUDA device raises")


@pytest.fixture
def no_device() -> Iterator[None]:
    """The host as the guards see it: probed, no CUDA device. Put back by the fixture itself, not by a
    ``monkeypatch`` fixture ending after it (its change would be this fixture's leak)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(guard_targets, "_host", ())  # the host seam
        yield


def failed_call(request: pytest.FixtureRequest, fn, when: str = "call"):
    call = pytest.CallInfo.from_call(fn, when)
    return call, pytest.TestReport.from_item_and_call(request.node, call)


def needs_cuda() -> None:
    torch.zeros(1, device="cuda")


def test_a_call_that_needs_a_gpu_becomes_a_skip_at_the_tests_line(request, no_device):
    call, report = failed_call(request, needs_cuda)
    assert report.failed
    needs_gpu.convert_test_report(report, call, request.node)
    assert report.skipped and needs_gpu.signature_of(report) == "cuda-init"
    path, lineno, reason = report.longrepr
    assert path == __file__
    assert lineno == needs_cuda.__code__.co_firstlineno + 1  # the line inside this file that needed the device
    where = Path(__file__).relative_to(request.config.rootpath).as_posix()
    assert reason.startswith(f"Skipped: trtcap: needs a GPU: {where}:{lineno}: RuntimeError: ")
    assert reason.endswith("(signature: cuda-init)")
    assert call.excinfo.errisinstance(pytest.skip.Exception)  # --pdb and exception hooks see the skip too


def test_a_setup_that_needs_a_gpu_becomes_a_skip_too(request, no_device):
    call, report = failed_call(request, needs_cuda, when="setup")
    needs_gpu.convert_test_report(report, call, request.node)
    assert report.skipped and report.when == "setup"


def test_a_teardown_failure_stays_a_failure(request, no_device):
    call, report = failed_call(request, needs_cuda, when="teardown")
    needs_gpu.convert_test_report(report, call, request.node)
    assert report.failed and needs_gpu.signature_of(report) is None


def test_an_assertion_of_the_test_stays_a_failure(request, no_device):
    def check() -> None:
        assert torch.ones(1).item() == 2.0, "CUDA error: no kernel image is available"

    call, report = failed_call(request, check)
    needs_gpu.convert_test_report(report, call, request.node)
    assert report.failed


def test_nothing_is_converted_on_a_host_with_a_device(request):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(guard_targets, "_host", ((8, 9),))  # the host seam
        call, report = failed_call(request, needs_cuda)
        needs_gpu.convert_test_report(report, call, request.node)
    assert report.failed


def test_signature_of_only_reads_reports_it_converted():
    assert needs_gpu.signature_of(SimpleNamespace(skipped=True, trtcap_needs_gpu="trt-engine")) == "trt-engine"
    assert needs_gpu.signature_of(SimpleNamespace(skipped=True)) is None  # the test's own skip
    assert needs_gpu.signature_of(SimpleNamespace(skipped=False, trtcap_needs_gpu="cuda-init")) is None
    assert needs_gpu.signature_of(SimpleNamespace(skipped=True, trtcap_needs_gpu=3)) is None


def test_summary_line_counts_each_signature_sorted_by_name():
    line = needs_gpu.summary_line(["trt-engine", "cuda-init", "cuda-init", "cuda-only-kernel"])
    assert line == "needs a GPU: 4 (cuda-init: 2, cuda-only-kernel: 1, trt-engine: 1)"


@pytest.mark.parametrize("caps, text", [
    ((), "skip (from x; no CUDA device: a failure that needs one is skipped)"),
    (((8, 9), (12, 0)), "skip (from x) does nothing: a CUDA device exists (8.9, 12.0)"),
    (None, "skip (from x; where no CUDA device exists, a failure that needs one is skipped; "
           "host probed at the first such failure)"),
])
def test_header_says_what_skip_does_on_this_host(caps, text, monkeypatch):
    monkeypatch.setattr(needs_gpu, "host_capabilities", lambda probe=True: caps)  # None: never probed
    assert needs_gpu.header_text("skip", "from x") == text


def test_header_of_off_keeps_failures():
    assert needs_gpu.header_text("off", "default") == (
        "off (default; a failure for want of a CUDA device stays a failure)"
    )
