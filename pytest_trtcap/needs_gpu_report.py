"""Apply ``--trtcap-needs-gpu skip`` to pytest's reports: a failure that needs a GPU becomes a skip.

Imported by the plugin only when the setting is ``skip`` and something failed, or for the verbose header; the
decision itself is ``needs_gpu.classify``. The host is probed (``trtcap_guards.targets.host_capabilities``,
memoized) only after a signature matched: on a host with a CUDA device nothing is converted.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any, Iterable, Optional, Tuple

import pytest

from trtcap_guards import targets

from .needs_gpu import NeedsGpu, classify


def _host_has_device(probe: bool = True) -> Optional[bool]:
    caps = targets.host_capabilities(probe=probe)
    return None if caps is None else bool(caps)


def _needs_gpu(excinfo: Any) -> Optional[NeedsGpu]:
    if excinfo is None:
        return None
    found = classify(excinfo.value)
    if found is None or _host_has_device():
        return None
    return found


def _skip(report: Any, found: NeedsGpu, rootpath: str, fallback: Tuple[str, Optional[int]]) -> None:
    """Turn ``report`` into the skip pytest itself would have reported, at the test's own line."""
    path, lineno = (found.path, found.lineno) if found.path is not None else fallback
    report.outcome = "skipped"
    report.trtcap_needs_gpu = found.signature.name  # travels with the report (xdist); a test's own skip has none
    report.longrepr = (str(path), lineno, "Skipped: " + found.reason(rootpath))


def _every_other_error_needs_a_gpu(item: pytest.Item) -> bool:
    """unittest runs a test's body, ``tearDown`` and cleanups in one call; pytest reports the first error there
    and keeps the others on the item (``_excinfo``, reported at teardown). The test is converted only when every
    failure it reports needs a GPU: a skip or an xfail among them is no failure."""
    for excinfo in item.__dict__.get("_excinfo") or ():
        value = getattr(excinfo, "value", None)
        if not isinstance(value, (pytest.skip.Exception, pytest.xfail.Exception)) and _needs_gpu(excinfo) is None:
            return False
    return True


def convert_test_report(report: pytest.TestReport, call: pytest.CallInfo, item: pytest.Item) -> None:
    """A failed setup or call whose exception needs a GPU, as does every other error the test reports: reported
    as skipped (teardown failures stay)."""
    if not report.failed or report.when not in ("setup", "call"):
        return
    found = _needs_gpu(call.excinfo)
    if found is not None and _every_other_error_needs_a_gpu(item):
        path, lineno, _ = item.reportinfo()
        _skip(report, found, str(item.config.rootpath), (str(path), None if lineno is None else lineno + 1))
        # The call now holds the skip as well (as pytest's unittest support does for SkipTest), so that --pdb
        # and other exception hooks treat it as the skip it was reported as.
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        call.excinfo = pytest.CallInfo.from_call(lambda: pytest.skip(reason), call.when).excinfo


def convert_collect_report(report: pytest.CollectReport, collector: pytest.Collector) -> None:
    """A module whose import needs a GPU (a device query in a decorator, say): the module is skipped."""
    if report.outcome != "failed":
        return
    # pytest keeps the collection's CallInfo on the report as ``call`` until ``collect_one_node`` pops it.
    found = _needs_gpu(getattr(report.__dict__.get("call"), "excinfo", None))
    if found is not None:
        _skip(report, found, str(collector.config.rootpath), (str(collector.path), None))
        report.result = []


def signature_of(report: Any) -> Optional[str]:
    """The signature of a report this module converted; None for any other report, whatever its text says."""
    name = getattr(report, "trtcap_needs_gpu", None)
    return name if report.skipped and isinstance(name, str) else None


def summary_line(signatures: Iterable[str]) -> str:
    """``needs a GPU: N (cuda-init: a, trt-engine: b, ...)`` over the converted skips."""
    names = Counter(signatures)
    total = sum(names.values())
    detail = ", ".join(f"{name}: {n}" for name, n in sorted(names.items()))
    return f"needs a GPU: {total} ({detail})"


def header_text(mode: str, sourced: str) -> str:
    """What ``--trtcap-needs-gpu`` does on this host; probes it only once torch is imported."""
    if mode != "skip":
        return f"{mode} ({sourced}; a failure for want of a CUDA device stays a failure)"
    device = _host_has_device(probe="torch" in sys.modules)
    if device:
        caps = ", ".join(targets.format_capability(c) for c in targets.host_capabilities(probe=False) or ())
        return f"skip ({sourced}) does nothing: a CUDA device exists ({caps})"
    if device is None:
        return (f"skip ({sourced}; where no CUDA device exists, a failure that needs one is skipped; "
                "host probed at the first such failure)")
    return f"skip ({sourced}; no CUDA device: a failure that needs one is skipped)"
