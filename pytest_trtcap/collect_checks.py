"""What each collector's report is checked for: capability markers given arguments, and (under
``--trtcap-needs-gpu skip``) collection errors that need a GPU. Loaded only where a collected test carries one of
the plugin's markers or that setting is on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import pytest

from . import markers

if TYPE_CHECKING:
    from .state import TrtcapState


def check_collect_report(report: pytest.CollectReport, collector: pytest.Collector,
                         state: Optional[TrtcapState]) -> None:
    """A collection error that needs a GPU skips (``--trtcap-needs-gpu skip``); capability markers given
    arguments fail the module's collection, naming the test and the arguments."""
    if report.outcome == "failed" and state is not None and state.settings.needs_gpu.value == "skip":
        from . import needs_gpu_report

        needs_gpu_report.convert_collect_report(report, collector)
    if report.outcome == "passed" and report.result:
        items = [item for item in report.result if isinstance(item, pytest.Item)]
        problems = [p for item in items for p in markers.bad_marker_usage(item)]
        if problems:
            report.outcome = "failed"
            report.longrepr = "trtcap: " + "\n".join(problems)
            report.result = []
