"""The vocabulary every part of the command shares: outcomes, verdicts, what counts as failing, exit statuses."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
FAILING = frozenset({"failed", "error"})
WHENS = ("setup", "call", "teardown", "collect", "crash")

#: Not a test outcome: a module (or class) pytest could not collect. Records keep these apart from
#: ``tests`` so they are counted once, never as test results; comparisons show them under this name.
COLLECTION_ERROR = "collection error"

COMPLETE = "COMPLETE"
INCOMPLETE = "INCOMPLETE"
#: A side with no reconciliation (a JUnit file, a record written without one): nothing proves it lost nothing.
UNVERIFIED = "UNVERIFIED"

#: ``trtcap``'s exit status (the only place these numbers live): 0 complete with no new failures; 1 new failures
#: (compare: regressions or new collection errors; sweep: arm-specific failures or collection errors on some
#: arms); 2 incomplete or unverified runs/records, unusable input, or bad usage.
EXIT_OK, EXIT_FAILURES, EXIT_INCOMPLETE = 0, 1, 2

#: The signature of a test whose reports stopped after setup: the run ended (or lost the report) inside it.
NEVER_CALLED = "Interrupted: the test never reported its call phase"

#: The skip reason the plugin gives a test that failed only for want of a CUDA device (--trtcap-needs-gpu skip).
NEEDS_GPU_PREFIX = "trtcap: needs a GPU: "


def needs_gpu(entry: Mapping[str, Any] | None) -> bool:
    """Whether a record entry is a skip the plugin made because the host has no GPU."""
    if entry is None or entry.get("outcome") != "skipped":
        return False
    reason = entry.get("reason")
    return isinstance(reason, str) and reason.startswith(NEEDS_GPU_PREFIX)


def outcome_counts(tests: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for entry in tests.values():
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts


def needs_gpu_count(tests: Mapping[str, Mapping[str, Any]]) -> int:
    return sum(1 for entry in tests.values() if needs_gpu(entry))
