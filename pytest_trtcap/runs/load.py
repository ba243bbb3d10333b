"""Loading any input ``trtcap compare`` accepts: a record, a recorder stream, or a JUnit XML report.

Whatever the file holds, the result is a :class:`Record` or a one-line :class:`RecordError` (bounded size,
bounded nesting, every field type checked).
"""

from __future__ import annotations

import json
import os
from typing import Any

from .junit import looks_like_xml, parse_junit
from .reconcile import reconcile
from .record import (
    SCHEMA,
    STREAM_SCHEMA,
    VERSION,
    Record,
    RecordError,
    build_record,
    gc_paused,
    read_bytes,
    upgrade,
    validate_record,
)
from .stream import read_stream


def _json_problem(text: str, exc: json.JSONDecodeError) -> str:
    what = exc.msg.removesuffix(" at")  # json's "Unterminated string starting at" already ends in "at"
    where = f"{what[:1].lower()}{what[1:]} at line {exc.lineno} column {exc.colno}"
    # An unterminated string runs to the end of the file; any other error at the very end means the
    # document stopped before its closing brackets: both are what a cut-off write looks like.
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()):
        return f"truncated JSON (the file ends early: {where})"
    return f"invalid JSON ({where})"


def record_from_junit(path: Any, raw: bytes | None = None) -> Record:
    tests = {key: {"outcome": case["outcome"], "signature": case["signature"], "reason": case["reason"]}
             for key, case in parse_junit(path, raw)["cases"].items()}
    data = {"schema": SCHEMA, "version": VERSION, "arm": None, "label": os.path.basename(str(path)),
            "source": "junit", "tests": tests, "collection_errors": {}}
    return Record(path, data, "junit")


def record_from_stream(path: Any, raw: bytes | None = None) -> Record:
    """A bare stream, reconciled with what it carries (no process exit status)."""
    stream = read_stream(path, raw)
    return Record(path, build_record(stream, reconcile(stream)), "stream")


def _not_json(constant: str) -> Any:
    """``NaN``, ``Infinity`` and ``-Infinity``: Python's json reads them, JSON has no such numbers."""
    raise ValueError(f"{constant} is not a JSON number")


def _decode_json(path: Any, text: str) -> Any:
    with gc_paused():
        try:
            return json.loads(text, parse_constant=_not_json)
        except json.JSONDecodeError as exc:
            raise RecordError(path, _json_problem(text, exc)) from None
        except RecursionError:
            raise RecordError(path, "invalid JSON (nested too deeply)") from None
        except ValueError as exc:  # e.g. an integer beyond Python's digit limit
            raise RecordError(path, f"invalid JSON ({str(exc).split(';')[0][:120]})") from None


def load_record(path: Any) -> Record:
    """Load a record JSON, a recorder stream, or a JUnit XML report; RecordError on anything else."""
    raw = read_bytes(path)
    if not raw.strip():
        raise RecordError(path, "empty file (0 bytes)" if not raw else "empty file (only whitespace)")
    if looks_like_xml(raw):
        return record_from_junit(path, raw)  # the bytes already read: a pipe cannot be read twice
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordError(path, f"not a text file (invalid UTF-8 at byte {exc.start})") from None
    head = text.lstrip()
    if not head.startswith(("{", "[")):
        raise RecordError(path, "neither a trtcap record (JSON) nor a JUnit XML report")
    if f'"{STREAM_SCHEMA}"' in head.split("\n", 1)[0]:
        return record_from_stream(path, raw)
    data: dict[str, Any] = validate_record(path, _decode_json(path, text))
    return Record(path, upgrade(data))
