"""Reconciliation: does the recorder's stream account for everything pytest itself counted?

The sources, all taken in process or from the operating system, never from pytest's terminal text: the
process exit status, whether the session finished, pytest's collected count, its failed-report counter and
(when the terminal reporter runs) its per-outcome stats. ``COMPLETE`` only when all agree and tests ran.
Collection errors are listed on their own and never count as a disagreement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .outcomes import COMPLETE, INCOMPLETE, NEVER_CALLED, OUTCOMES, outcome_counts

_EXIT_MEANING = {2: "interrupted", 3: "internal error", 4: "usage error"}
_NO_TESTS_COLLECTED = 5
#: pytest's exit status when it refuses its arguments (``pytest.ExitCode.USAGE_ERROR``; pytest is not imported here).
PYTEST_USAGE_ERROR = 4


def _signal_name(code: int) -> str:
    import signal

    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def _process(stream: Mapping[str, Any], returncode: int | None, out: list[str]) -> None:
    finished, exitstatus = stream.get("finished"), stream.get("exitstatus")
    running = stream.get("running") or []
    where = f" while running {', '.join(running[:3])}" if running else ""
    if returncode is not None and returncode < 0:
        out.append(f"process: pytest was killed by {_signal_name(returncode)}{where}")
    elif not finished:
        # Exit code 4 before the recorder wrote a line is pytest refusing its arguments or configuration;
        # any other code of an unfinished session may be a test's own os._exit.
        meaning = " (usage error)" if returncode == PYTEST_USAGE_ERROR and not stream.get("meta") else ""
        code = f" with exit code {returncode}{meaning}" if returncode is not None else ""
        out.append(f"process: pytest exited{code} before the session finished{where}")
    elif returncode is not None and exitstatus is not None and returncode != exitstatus:
        out.append(f"process: exit code {returncode} but the session ended with status {exitstatus}")
    if finished and exitstatus in _EXIT_MEANING:
        errors = len(stream.get("collection_errors") or {})
        why = f": {errors} collection error(s) stopped the run" if exitstatus == 2 and errors else ""
        out.append(f"process: pytest's exit status is {exitstatus} ({_EXIT_MEANING[exitstatus]}{why})")
    stopped = (stream.get("counted") or {}).get("stopped")
    if finished and stopped:
        out.append(f"process: pytest stopped the session early ({stopped})")
    if finished and exitstatus == _NO_TESTS_COLLECTED:
        out.append("process: pytest's exit status is 5 (no tests collected): nothing was tested")


def _collected(stream: Mapping[str, Any], items: int, out: list[str]) -> int | None:
    counted = stream.get("counted") or {}
    collected = counted.get("collected", stream.get("collected"))
    seen = set(stream.get("collected_counts") or [])
    if len(seen) > 1:
        out.append(f"collected: workers collected different counts ({', '.join(map(str, sorted(seen)))})")
    if collected is None:
        if stream.get("finished") or items:
            out.append("collected: the run never reported its collected count")
    elif collected != items:
        missing = collected - items
        if missing > 0:
            out.append(
                f"collected: {collected} tests collected, the record has results for {items} ({missing} missing)"
            )
        else:
            out.append(f"collected: {collected} tests collected, the record has {items} ({-missing} more)")
    if not items and stream.get("finished") and stream.get("exitstatus") != _NO_TESTS_COLLECTED:
        out.append("record: no test ran (pytest collected or kept no tests)")
    return collected


def recorded_reports(items: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """Per category, the reports the stream accounts for (pytest counts reports, not tests)."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for entry in items.values():
        categories = entry.get("categories")
        for category in categories if categories is not None else [entry.get("outcome")]:
            if category in counts:
                counts[category] += 1
    return counts


def _counted(stream: Mapping[str, Any], items: Mapping[str, Mapping[str, Any]], out: list[str]) -> None:
    counted = stream.get("counted")
    if not stream.get("finished"):
        return
    if counted is None:
        out.append("counts: the stream carries no counts from pytest (written by an older recorder?)")
        return
    ours = recorded_reports(items)
    failed = stream.get("failed_reports_seen")
    if not isinstance(failed, int):  # a stream of an older recorder: the failed reports its entries hold
        failed = ours["failed"] + ours["error"] + int(stream.get("collection_error_reports") or 0)
    if isinstance(counted.get("failed_reports"), int) and counted["failed_reports"] != failed:
        out.append(f"counts: pytest counted {counted['failed_reports']} failed report(s), the record has {failed}")
    theirs = counted.get("outcomes")
    if isinstance(theirs, dict):
        parts = [f"{k} {theirs.get(k, 0)} vs {ours[k]}" for k in OUTCOMES if theirs.get(k, 0) != ours[k]]
        if parts:
            total = sum(abs(theirs.get(k, 0) - ours[k]) for k in OUTCOMES)
            out.append(
                f"counts: pytest's own counts differ from the record by {total} report(s) "
                f"({', '.join(parts)}; pytest vs record)"
            )
    deselected = counted.get("deselected")
    if isinstance(deselected, int) and deselected != (stream.get("deselected") or 0):
        out.append(f"counts: pytest deselected {deselected} test(s), the record says {stream.get('deselected') or 0}")


def reconcile(stream: Mapping[str, Any], *, returncode: int | None = None) -> dict[str, Any]:
    """Cross-check the recorder's stream against pytest's own counts and the process's exit status."""
    tests = stream["tests"]
    items = {k: v for k, v in tests.items() if v.get("when") != "collect"}
    disagreements: list[str] = []
    _process(stream, returncode, disagreements)
    collected = _collected(stream, len(items), disagreements)
    crashed = [n for n, e in items.items() if e.get("when") == "crash"]
    if crashed:
        disagreements.append(f"record: {len(crashed)} test(s) lost to a crashed worker: {', '.join(crashed[:3])}")
    stopped = [n for n, e in items.items() if e.get("signature") == NEVER_CALLED]
    if stopped:
        disagreements.append(
            f"record: {len(stopped)} test(s) never reported their call phase: {', '.join(stopped[:3])}"
        )
    if stream.get("bad_lines"):
        disagreements.append(f"record: {stream['bad_lines']} unreadable line(s) in the recorder's stream")
    _counted(stream, items, disagreements)
    sources = {
        "record": {"tests": len(items), "collection_skips": len(tests) - len(items), "counts": outcome_counts(tests),
                   "collection_errors": len(stream.get("collection_errors") or {})},
        "process": {"returncode": returncode, "session_exitstatus": stream.get("exitstatus"),
                    "finished": bool(stream.get("finished"))},
        "collected": collected,
        "pytest": stream.get("counted"),
    }
    return {"result": INCOMPLETE if disagreements else COMPLETE, "disagreements": disagreements, "sources": sources}
