"""Field-by-field validation of a record (the rules ``record.schema.json`` publishes).

A record comes from disk, maybe from another machine or a hand edit; every field the command reads is
checked for its type here, so a bad one is a one-line RecordError naming the file, never a traceback.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .outcomes import COMPLETE, INCOMPLETE, OUTCOMES, WHENS
from .record import SCHEMA, VERSION, RecordError

_STR, _INT, _NUM, _BOOL = (str,), (int,), (int, float), (bool,)
_TYPE_NAMES = {
    str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "an array", dict: "an object"
}

#: Optional top-level fields: name -> allowed types (null is always allowed).
TOP_FIELDS: Dict[str, Tuple[type, ...]] = {
    "arm": _STR, "label": _STR, "created": _STR, "collected": _INT, "deselected": _INT, "finished": _BOOL,
    "duration": _NUM, "pytest": (dict,), "files": (dict,), "source": _STR,
}
#: Top-level counts pytest made: never below zero.
COUNTS = ("collected", "deselected")
#: Fields of the ``pytest`` object: scalars, then arrays of strings.
PYTEST_FIELDS: Dict[str, Tuple[type, ...]] = {"version": _STR, "rootdir": _STR, "exitstatus": _INT, "returncode": _INT}
PYTEST_LISTS = ("args", "command")
ENTRY_FIELDS: Dict[str, Tuple[type, ...]] = {
    "signature": _STR, "reason": _STR, "when": _STR, "duration": _NUM, "line": _INT,
}


def of_type(value: Any, types: Tuple[type, ...]) -> bool:
    """Whether ``value`` is of one of ``types``; a bool only where bool is named (JSON's true is no count)."""
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _check(path: Any, where: str, value: Any, types: Tuple[type, ...]) -> None:
    if value is not None and not of_type(value, types):
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise RecordError(path, f"{where} must be {wanted} or null (got {type(value).__name__})")


def _check_strings(path: Any, where: str, value: Any) -> None:
    if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
        raise RecordError(path, f"{where} must be an array of strings")


def _check_header(path: Any, data: Dict[str, Any]) -> None:
    schema = data.get("schema")
    if schema != SCHEMA:
        if schema is None:
            keys = ", ".join(sorted(map(str, data))[:6]) or "none"
            raise RecordError(path, f"not a trtcap record (no \"schema\": \"{SCHEMA}\"; top-level keys: {keys})")
        raise RecordError(path, f"not a trtcap record (schema is {str(schema)[:60]!r}, expected {SCHEMA!r})")
    version = data.get("version")
    if not of_type(version, _INT) or version < 1:
        raise RecordError(path, f"record has no valid \"version\" (got {repr(version)[:40]})")
    if version > VERSION:
        raise RecordError(
            path, f"record version {version} is newer than this trtcap understands ({VERSION}): upgrade pytest-trtcap"
        )
    for name, types in TOP_FIELDS.items():
        _check(path, f"record's {name!r}", data.get(name), types)
    for name in COUNTS:
        if data.get(name) is not None and data[name] < 0:
            raise RecordError(path, f"record's {name!r} must not be negative (got {data[name]})")
    for name, types in PYTEST_FIELDS.items():
        _check(path, f"record's 'pytest.{name}'", (data.get("pytest") or {}).get(name), types)
    for name in PYTEST_LISTS:
        _check_strings(path, f"record's 'pytest.{name}'", (data.get("pytest") or {}).get(name))
    for name, value in (data.get("files") or {}).items():
        if not isinstance(value, str):
            raise RecordError(path, f"record's 'files.{name[:40]}' must be a string (got {type(value).__name__})")
    _check_strings(path, "record's 'running'", data.get("running"))
    _check_strings(path, "record's 'stderr_tail'", data.get("stderr_tail"))


def check_entry(path: Any, nodeid: str, entry: Any) -> None:
    where = f"test {nodeid[:200]!r}"
    if not isinstance(entry, dict):
        raise RecordError(path, f"{where}: entry must be an object")
    outcome = entry.get("outcome")
    if not isinstance(outcome, str) or outcome not in OUTCOMES:
        raise RecordError(
            path, f"{where}: invalid outcome {str(outcome)[:40]!r} (expected one of {', '.join(OUTCOMES)})"
        )
    for name, types in ENTRY_FIELDS.items():
        _check(path, f"{where}: {name!r}", entry.get(name), types)
    if of_type(entry.get("line"), _INT) and entry["line"] < 1:
        raise RecordError(path, f"{where}: 'line' must be 1 or more (got {entry['line']})")
    if entry.get("when") is not None and entry["when"] not in WHENS:
        raise RecordError(path, f"{where}: invalid 'when' {entry['when'][:40]!r} (expected one of {', '.join(WHENS)})")
    _check_strings(path, f"{where}: 'categories'", entry.get("categories"))


def _check_reconciliation(path: Any, rec: Any) -> None:
    if rec is None:
        return
    if not isinstance(rec, dict) or rec.get("result") not in (COMPLETE, INCOMPLETE):
        raise RecordError(path, "record's \"reconciliation\" must be an object with result COMPLETE or INCOMPLETE")
    _check_strings(path, "reconciliation's 'disagreements'", rec.get("disagreements"))
    _check(path, "reconciliation's 'sources'", rec.get("sources"), (dict,))


def validate_record(path: Any, data: Any) -> Dict[str, Any]:
    """Check a parsed JSON value is a trtcap record; raise RecordError naming what is wrong."""
    if not isinstance(data, dict):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "null")
        raise RecordError(
            path,
            f"not a trtcap record (top level is a JSON {kind}, expected an object with \"schema\": \"{SCHEMA}\")",
        )
    _check_header(path, data)
    tests = data.get("tests")
    if not isinstance(tests, dict):
        raise RecordError(path, f"record's \"tests\" must be an object keyed by node id (got {type(tests).__name__})")
    for nodeid, entry in tests.items():
        check_entry(path, nodeid, entry)
    errors = data.get("collection_errors")
    _check(path, "record's 'collection_errors'", errors, (dict,))
    for nodeid, error in (errors or {}).items():
        if not isinstance(error, dict):
            raise RecordError(path, f"collection error {nodeid[:200]!r} must be an object")
        _check(path, f"collection error {nodeid[:200]!r}: 'signature'", error.get("signature"), _STR)
        _check(path, f"collection error {nodeid[:200]!r}: 'message'", error.get("message"), _STR)
    _check_reconciliation(path, data.get("reconciliation"))
    return data
