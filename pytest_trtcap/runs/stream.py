"""Reading the recorder's JSON-lines stream back, tolerant of a run that died mid-write."""

from __future__ import annotations

import json
from typing import Any

from .record import STREAM_SCHEMA, RecordError, check_entry, of_type, read_bytes


def empty_stream(problem: str = "") -> dict[str, Any]:
    """The stream of a run that left nothing readable (``problem`` says why)."""
    stream: dict[str, Any] = {
        "meta": None, "tests": {}, "collection_errors": {}, "collection_error_reports": 0, "collected": None,
        "deselected": 0, "finished": False, "exitstatus": None, "counted": None, "running": [],
        "bad_lines": 0, "collected_counts": [], "failed_reports_seen": None,
    }
    if problem:
        stream["stream_error"] = problem
    return stream


def _is(value: Any, kind: type) -> bool:
    """``value`` is null or of ``kind``, as the record's check reads types (a bool is no count)."""
    return value is None or of_type(value, (kind,))


def _counted_ok(counted: Any) -> bool:
    """pytest's own counts as the recorder writes them: what reconciliation computes with."""
    if counted is None:
        return True
    if not isinstance(counted, dict) or not all(
        _is(counted.get(k), int) for k in ("collected", "failed_reports", "deselected")
    ):
        return False
    outcomes = counted.get("outcomes")
    return outcomes is None or isinstance(outcomes, dict) and all(_is(v, int) for v in outcomes.values())


def _readable(event: dict[str, Any]) -> bool:
    """Whether an event's fields have the types the record schema gives them; one that breaks them is an
    unreadable line, never carried into a record (``trtcap compare`` reads a bare stream too)."""
    kind = event.get("e")
    if kind == "start":
        return isinstance(event.get("id"), str)
    if kind == "test":
        try:
            check_entry("", "", {k: v for k, v in event.items() if k not in ("e", "id")})
        except RecordError:
            return False
    elif kind == "collection_error":
        return _is(event.get("signature"), str) and _is(event.get("message"), str)
    elif kind == "finish":
        return (_is(event.get("exitstatus"), int) and _counted_ok(event.get("counted"))
                and _is(event.get("failed_reports_seen"), int))
    return True


def _apply(out: dict[str, Any], started: dict[Any, None], event: dict[str, Any]) -> None:
    kind = event.get("e")
    if kind is None and event.get("schema") == STREAM_SCHEMA:
        out["meta"] = event
    elif kind == "start":
        started[event.get("id")] = None
    elif kind == "test":
        nodeid = event.pop("id", None)
        event.pop("e", None)
        if isinstance(nodeid, str):
            out["tests"][nodeid] = event
            started.pop(nodeid, None)
    elif kind == "collection_error":
        out["collection_error_reports"] += 1  # under xdist each worker may report the same module
        nodeid = event.get("id")
        if isinstance(nodeid, str):
            out["collection_errors"].setdefault(
                nodeid, {"signature": event.get("signature"), "message": event.get("message")}
            )
    elif kind == "collected":
        n = event.get("n")
        if isinstance(n, int):
            out["collected_counts"].append(n)
            out["collected"] = n if out["collected"] is None else max(out["collected"], n)
        if isinstance(event.get("deselected"), int):
            out["deselected"] = max(out["deselected"], event["deselected"])
    elif kind == "finish":
        out["finished"] = True
        out["exitstatus"] = event.get("exitstatus")
        out["counted"] = event.get("counted")
        out["failed_reports_seen"] = event.get("failed_reports_seen")


def read_stream(path: Any, raw: bytes | None = None) -> dict[str, Any]:
    """The stream as a dict: ``meta`` (the header), ``tests``, ``collection_errors``, ``collected``,
    ``deselected``, ``finished``, ``exitstatus``, ``counted`` (pytest's own counts), ``running`` (started
    but unfinished node ids), ``bad_lines`` and ``collection_error_reports``. ``raw``: the file's bytes when
    the caller has read them already (a pipe can be read once).
    """
    if raw is None:
        raw = read_bytes(path, missing="missing: pytest did not start the recorder (no stream written)")
    lines = raw.decode("utf-8", errors="replace").split("\n")
    out = empty_stream()
    started: dict[Any, None] = {}
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            if number != last:  # a torn final line is the expected shape of a killed run
                out["bad_lines"] += 1
            continue
        if not isinstance(event, dict) or not _readable(event):
            out["bad_lines"] += 1
            continue
        _apply(out, started, event)
    if out["meta"] is None and not out["tests"] and not out["finished"]:
        raise RecordError(path, "not a trtcap recorder stream (no header line)")
    out["running"] = list(started)
    return out
