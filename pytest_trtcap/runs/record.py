"""The run record: what one pytest run produced, keyed by node id (JSON Schema: ``record.schema.json``).

::

    {
      "schema": "trtcap-record", "version": 2,
      "arm": "7.5" | null,              # --trt-target-sm of the run, when known
      "label": "arm 7.5",               # what reports print for this record
      "created": "2025-01-01T00:00:00Z",
      "pytest": {"version": "9.2.0", "args": [...], "rootdir": "...",
                 "exitstatus": 1 | null, "returncode": 1 | null},
      "collected": 12 | null,           # items pytest collected (after deselection)
      "deselected": 0,
      "finished": true,                 # pytest_sessionfinish was reached
      "running": [nodeid, ...],         # tests started but never finished (a crash)
      "tests": {
        nodeid: {"outcome": "passed|failed|error|skipped|xfailed|xpassed",
                 "signature": "ValueError: bad shape <N>x<N>" | null,
                 "reason": "raw skip/xfail reason" | null,
                 "when": "setup|call|teardown|collect|crash",
                 "duration": 0.01,
                 "line": 12 | null,             # where pytest says the test is defined (1-based)
                 "categories": ["passed", "error"]}   # pytest's summary categories of its reports
      },
      "collection_errors": {nodeid: {"signature": "ImportError: ...", "message": "..."}},   # version 2
      "reconciliation": {"result": "COMPLETE|INCOMPLETE", "disagreements": [...], "sources": {...}},
      "stderr_tail": [...]               # only for runs that did not complete
    }

Version 1 records (collection errors kept in ``tests`` with ``"when": "collect"``) are read and upgraded.

Every input a record is read from (a record, a recorder stream, a JUnit report) is read here first: ``trtcap
compare`` takes any path a user (or a CI artefact) hands it, and whatever that file is, the answer is either its
bytes or a :class:`RecordError` that the command prints as one line and exits 2 on. A record read from disk
(maybe from another machine or a hand edit) has every field the command reads checked for its type, by the
rules ``record.schema.json`` publishes (:func:`validate_record`): a bad one is a one-line RecordError too.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import stat
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .outcomes import COMPLETE, INCOMPLETE, OUTCOMES, WHENS, needs_gpu_count, outcome_counts

SCHEMA = "trtcap-record"
STREAM_SCHEMA = "trtcap-stream"
VERSION = 2

#: Larger than any real record (100,000 tests make about 20 MB); /dev/zero or a runaway file stops here.
MAX_BYTES = 512 * 1024 * 1024


class RecordError(Exception):
    """A file that cannot be used as a record. ``str()`` is one line naming the file and the problem."""

    def __init__(self, path: Any, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def _read_pipe(fh: Any, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of a pipe, in chunks (``read(limit)`` would allocate the limit up front)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: Any, missing: str = "no such file") -> bytes:
    """The file's bytes (at most ``MAX_BYTES``, no devices); a RecordError naming the file and what is wrong
    otherwise."""
    limit = MAX_BYTES
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
                raise RecordError(path, "is a device, not a file")
            regular = stat.S_ISREG(info.st_mode)
            if regular and info.st_size > limit:
                raise RecordError(path, f"larger than {limit // (1024 * 1024)} MiB: not a record trtcap can use")
            data = fh.read() if regular else _read_pipe(fh, limit)
    except FileNotFoundError:
        raise RecordError(path, missing) from None
    except IsADirectoryError:
        raise RecordError(path, "is a directory, not a file") from None
    except PermissionError:
        raise RecordError(path, "permission denied") from None
    except OSError as exc:
        raise RecordError(path, f"cannot read: {exc.strerror or exc}") from None
    except MemoryError:
        raise RecordError(path, "too large to read") from None
    if len(data) > limit:
        raise RecordError(path, f"larger than {limit // (1024 * 1024)} MiB: not a record trtcap can use")
    return data


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector disabled inside the block, around bulk work on records; re-enabled after,
    only if it was enabled before.

    Loading and comparing 100,000-test records makes only acyclic dicts and lists; the collector's full passes
    over them would otherwise take about half the time. One home for the switch, so it is always switched back on.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A version-1 record in version 2's shape: collection errors move out of ``tests``."""
    if data.get("version", VERSION) >= 2:
        data.setdefault("collection_errors", {})
        return data
    tests, errors = {}, {}
    for nodeid, entry in data["tests"].items():
        if entry.get("when") == "collect" and entry.get("outcome") == "error":
            errors[nodeid] = {"signature": entry.get("signature"), "message": None}
        else:
            tests[nodeid] = entry
    data["tests"], data["collection_errors"] = tests, errors
    return data


# --- field-by-field validation ------------------------------------------------------------------------------

_STR, _INT, _NUM, _BOOL = (str,), (int,), (int, float), (bool,)
_TYPE_NAMES = {
    str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "an array", dict: "an object"
}

#: Optional top-level fields: name -> allowed types (null is always allowed).
TOP_FIELDS: dict[str, tuple[type, ...]] = {
    "arm": _STR, "label": _STR, "created": _STR, "collected": _INT, "deselected": _INT, "finished": _BOOL,
    "duration": _NUM, "pytest": (dict,), "files": (dict,), "source": _STR,
}
#: Top-level counts pytest made: never below zero.
COUNTS = ("collected", "deselected")
#: Fields of the ``pytest`` object: scalars, then arrays of strings.
PYTEST_FIELDS: dict[str, tuple[type, ...]] = {"version": _STR, "rootdir": _STR, "exitstatus": _INT, "returncode": _INT}
PYTEST_LISTS = ("args", "command")
ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "signature": _STR, "reason": _STR, "when": _STR, "duration": _NUM, "line": _INT,
}


def of_type(value: Any, types: tuple[type, ...]) -> bool:
    """Whether ``value`` is of one of ``types``; a bool only where bool is named (JSON's true is no count)."""
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _check(path: Any, where: str, value: Any, types: tuple[type, ...]) -> None:
    if value is not None and not of_type(value, types):
        wanted = " or ".join(_TYPE_NAMES[t] for t in types)
        raise RecordError(path, f"{where} must be {wanted} or null (got {type(value).__name__})")


def _check_strings(path: Any, where: str, value: Any) -> None:
    if value is not None and (not isinstance(value, list) or not all(isinstance(x, str) for x in value)):
        raise RecordError(path, f"{where} must be an array of strings")


def _check_header(path: Any, data: dict[str, Any]) -> None:
    schema = data.get("schema")
    if schema != SCHEMA:
        if schema is None:
            keys = ", ".join(sorted(map(str, data))[:6]) or "none"
            raise RecordError(path, f"not a trtcap record (no \"schema\": \"{SCHEMA}\"; top-level keys: {keys})")
        raise RecordError(path, f"not a trtcap record (schema is {str(schema)[:60]!r}, expected {SCHEMA!r})")
    version = data.get("version")
    if not isinstance(version, int) or not of_type(version, _INT) or version < 1:
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
    _check_strings(path, f"{where}: 'layer_findings'", entry.get("layer_findings"))
    _check_read(path, where, entry.get("layers_read"))


def _check_read(path: Any, where: str, read: Any) -> None:
    """``layers_read``: [networks, engines], two counts."""
    if read is not None and not (isinstance(read, list) and len(read) == 2
                                 and all(of_type(n, _INT) and n >= 0 for n in read)):
        raise RecordError(path, f"{where}: 'layers_read' must be [networks, engines] (got {str(read)[:40]})")


def _check_reconciliation(path: Any, rec: Any) -> None:
    if rec is None:
        return
    if not isinstance(rec, dict) or rec.get("result") not in (COMPLETE, INCOMPLETE):
        raise RecordError(path, "record's \"reconciliation\" must be an object with result COMPLETE or INCOMPLETE")
    _check_strings(path, "reconciliation's 'disagreements'", rec.get("disagreements"))
    _check(path, "reconciliation's 'sources'", rec.get("sources"), (dict,))


def validate_record(path: Any, data: Any) -> dict[str, Any]:
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


# --- a loaded record; building and writing one ------------------------------------------------------------


class Record:
    """A loaded record: ``tests`` maps node id -> entry dict; ``data`` is the whole JSON object."""

    __slots__ = ("path", "data", "tests", "source")

    def __init__(self, path: Any, data: dict[str, Any], source: str = "record") -> None:
        self.path = str(path)
        self.data = data
        self.tests: dict[str, dict[str, Any]] = data["tests"]
        self.source = source

    @property
    def arm(self) -> str | None:
        return self.data.get("arm")

    @property
    def label(self) -> str:
        return self.data.get("label") or (f"arm {self.arm}" if self.arm else os.path.basename(self.path))

    @property
    def result(self) -> str | None:
        rec = self.data.get("reconciliation")
        return rec.get("result") if isinstance(rec, dict) else None

    @property
    def disagreements(self) -> list[str]:
        rec = self.data.get("reconciliation")
        return list(rec.get("disagreements") or []) if isinstance(rec, dict) else []

    @property
    def collection_errors(self) -> dict[str, dict[str, Any]]:
        return self.data.get("collection_errors") or {}

    def counts(self) -> dict[str, int]:
        return outcome_counts(self.tests)

    def needs_gpu(self) -> int:
        return needs_gpu_count(self.tests)


def build_record(
    stream: Mapping[str, Any],
    reconciliation: dict[str, Any],
    *,
    arm: str | None = None,
    returncode: int | None = None,
    stderr_tail: list[str] | None = None,
) -> dict[str, Any]:
    """A record (the schema above) from a recorder stream and its reconciliation."""
    meta = stream.get("meta") or {}
    if arm is None:
        arm = meta.get("arm")
    data: dict[str, Any] = {
        "schema": SCHEMA, "version": VERSION, "arm": arm, "label": f"arm {arm}" if arm else None,
        "created": utc_now(),
        "pytest": {"version": meta.get("pytest"), "args": meta.get("args"), "rootdir": meta.get("rootdir"),
                   "exitstatus": stream.get("exitstatus"), "returncode": returncode},
        "collected": stream.get("collected"),
        "deselected": stream.get("deselected") or 0,
        "finished": bool(stream.get("finished")),
        "running": list(stream.get("running") or []),
        "tests": dict(stream["tests"]),
        "collection_errors": dict(stream.get("collection_errors") or {}),
        "reconciliation": reconciliation,
    }
    if reconciliation["result"] != COMPLETE and stderr_tail:
        data["stderr_tail"] = list(stderr_tail)
    return data


def _dumps(value: Any, indent: int | None = None) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a test's text: keep it, escaped, losslessly
        text = json.dumps(value, ensure_ascii=True, indent=indent)
    return text


def dump_record(data: Mapping[str, Any], path: Any) -> None:
    """Write a record: header fields indented, one test per line (diffable, and fast for 100k tests).

    The text goes to a new file beside ``path`` (created exclusively: a link or FIFO planted there is never
    written through) and replaces ``path`` only once complete; on any failure it is removed, so an earlier
    record stays whole and no partial file is left behind.
    """
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(str(path)) + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with open(fd, "w", encoding="utf-8") as fh:
            _write_record(fh, data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    """The process umask (mkstemp creates 0600; a record gets the mode an ordinary write would give it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_record(fh: Any, data: Mapping[str, Any]) -> None:
    head = {k: v for k, v in data.items() if k != "tests"}
    text = _dumps(head, indent=2)
    fh.write(text[:-2] + ",\n" if head else "{\n")
    fh.write('  "tests": {')
    first = True
    for nodeid, entry in data["tests"].items():
        fh.write(("\n    " if first else ",\n    ") + _dumps(nodeid) + ": " + _dumps(entry))
        first = False
    fh.write("\n  }\n}\n" if not first else "}\n}\n")
