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
bytes or a :class:`RecordError` that the command prints as one line and exits 2 on.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import stat
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Mapping, Optional

from .outcomes import COMPLETE, needs_gpu_count, outcome_counts

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


def upgrade(data: Dict[str, Any]) -> Dict[str, Any]:
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


class Record:
    """A loaded record: ``tests`` maps node id -> entry dict; ``data`` is the whole JSON object."""

    __slots__ = ("path", "data", "tests", "source")

    def __init__(self, path: Any, data: Dict[str, Any], source: str = "record") -> None:
        self.path = str(path)
        self.data = data
        self.tests: Dict[str, Dict[str, Any]] = data["tests"]
        self.source = source

    @property
    def arm(self) -> Optional[str]:
        return self.data.get("arm")

    @property
    def label(self) -> str:
        return self.data.get("label") or (f"arm {self.arm}" if self.arm else os.path.basename(self.path))

    @property
    def result(self) -> Optional[str]:
        rec = self.data.get("reconciliation")
        return rec.get("result") if isinstance(rec, dict) else None

    @property
    def disagreements(self) -> List[str]:
        rec = self.data.get("reconciliation")
        return list(rec.get("disagreements") or []) if isinstance(rec, dict) else []

    @property
    def collection_errors(self) -> Dict[str, Dict[str, Any]]:
        return self.data.get("collection_errors") or {}

    def counts(self) -> Dict[str, int]:
        return outcome_counts(self.tests)

    def needs_gpu(self) -> int:
        return needs_gpu_count(self.tests)


def build_record(
    stream: Mapping[str, Any],
    reconciliation: Dict[str, Any],
    *,
    arm: Optional[str] = None,
    returncode: Optional[int] = None,
    stderr_tail: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """A record (the schema above) from a recorder stream and its reconciliation."""
    meta = stream.get("meta") or {}
    if arm is None:
        arm = meta.get("arm")
    data: Dict[str, Any] = {
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


def _dumps(value: Any, indent: Optional[int] = None) -> str:
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
