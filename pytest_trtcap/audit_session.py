"""``--trtcap-audit``: audit every partition Torch-TensorRT produces during the run, and report it per test.

Once the suite has imported torch_tensorrt, the partitioner entry points of ``torch_tensorrt.dynamo.partitioning``
(the attributes ``dynamo.compile`` and suites call) are wrapped: each partitioned module goes through
:func:`pytest_trtcap.audit.unservable_in_partition`, and what it finds is attributed to the running test. The
originals are put back when the session ends. Resource partitioning only splits ``_run_on_acc*`` blocks further
(it never moves a node between TensorRT and PyTorch), so the partitions it starts from are the ones audited.
Imported only when the setting is on.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Dict, Generator, List, Optional, Tuple

import pytest

from trtcap_guards.live_registry import loaded_converter_registry

from .audit import unservable_in_partition
from .report_properties import OwnProperties

PARTITIONING = "torch_tensorrt.dynamo.partitioning"
ENTRY_POINTS = ("fast_partition", "global_partition", "hierarchical_adjacency_partition")
OUTSIDE = "(outside tests)"
_FOUND = "trtcap_unservable"
_AUDITED = "trtcap_audited"


class TrtcapAuditError(Exception):
    """A test put nodes on TensorRT that the declared targets cannot serve (``--trtcap-audit --trtcap-strict``)."""


class AuditSession:
    """Wraps the partitioners while the session runs; collects findings per test from the test reports."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.current: Optional[str] = None  # node id of the test running in this process
        self.pending: Dict[str, List[str]] = {}  # findings of this process, not yet attached to a report
        self.audited: Dict[str, int] = {}  # partitions audited, per test, in this process
        self.found: Dict[str, List[str]] = {}  # from reports: right under xdist too
        self.partitions = 0  # from reports
        self.properties = OwnProperties()  # what this plugin attached to the reports
        self._restore: List[Tuple[Any, str, Any]] = []

    # --- wrapping -----------------------------------------------------------------------------------------

    def activate(self) -> None:
        """Wrap the entry points (idempotent); called once torch_tensorrt has been imported."""
        if self._restore:
            return
        module = importlib.import_module(PARTITIONING)
        for name in ENTRY_POINTS:
            original = getattr(module, name, None)
            if callable(original):
                setattr(module, name, self._wrap(original))
                self._restore.append((module, name, original))

    def deactivate(self) -> None:
        """Put the original entry points back (in reverse order, so nested sessions unwind); an entry point someone
        replaced after us is theirs to restore, and is left alone."""
        while self._restore:
            module, name, original = self._restore.pop()
            if getattr(getattr(module, name, None), "__trtcap_audited__", None) is original:
                setattr(module, name, original)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def audited(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            self.record(result[0] if isinstance(result, tuple) and result else result)
            return result

        audited.__trtcap_audited__ = original  # type: ignore[attr-defined]
        return audited

    def record(self, module: Any) -> None:
        """Audit one partitioned module; never breaks the partitioner's caller."""
        key = self.current or OUTSIDE
        # the settings the partitioner's validators were given (``set_compilation_settings``): a rule may depend on
        # them (``use_fp32_acc`` runs FP16 GEMMs as FP32), and the partitioners take none of their own
        settings = getattr(loaded_converter_registry(), "compilation_settings", None)
        try:
            found = [p.describe() for p in unservable_in_partition(module, settings)]
        except Exception as exc:  # pragma: no cover - the rules are total; this is the last line of defence
            found = [f"audit failed: {type(exc).__name__}: {exc}"]
        self.audited[key] = self.audited.get(key, 0) + 1
        if found:
            self.pending.setdefault(key, []).extend(found)

    # --- hooks --------------------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.current = item.nodeid
        try:
            return (yield)
        finally:
            self.current = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """Attach the test's findings to its teardown report; under ``--trtcap-strict`` they error the test."""
        found = self.pending.pop(item.nodeid, [])
        self.properties.append(item, _AUDITED, self.audited.pop(item.nodeid, 0))
        if found:
            self.properties.append(item, _FOUND, found)
        result = yield
        if found and self.strict:
            raise TrtcapAuditError(
                f"trtcap: {item.nodeid} placed {len(found)} node(s) on TensorRT that the declared targets cannot "
                "serve (--trtcap-audit, --trtcap-strict):\n" + "\n".join(f"  {line}" for line in found)
            )
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for key, value in self.properties.read(report, _FOUND, _AUDITED):
            if key == _FOUND:
                self.found.setdefault(report.nodeid, []).extend(value)
            elif key == _AUDITED:
                self.partitions += value

    # --- report -------------------------------------------------------------------------------------------

    def summary_lines(self) -> List[str]:
        found = dict(self.found)
        for key, lines in self.pending.items():  # partitions made outside any test (module level, session fixtures)
            found.setdefault(key, []).extend(lines)
        partitions = self.partitions + sum(self.audited.values())
        if not found:
            return [f"placement audit: {partitions} partition(s) audited; no unservable placements"]
        total = sum(len(lines) for lines in found.values())
        out = [f"placement audit: {partitions} partition(s) audited; {total} unservable placement(s) in "
               f"{len(found)} test(s)"]
        for nodeid, lines in found.items():
            out.append(f"  {nodeid}")
            out.extend(f"    {line}" for line in lines)
        return out


def start(config: pytest.Config, strict: bool) -> AuditSession:
    """Register the audit for this session (activated when torch_tensorrt is imported)."""
    session = AuditSession(strict)
    config.pluginmanager.register(session, "trtcap-audit")
    return session
