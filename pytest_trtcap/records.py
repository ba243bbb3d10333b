"""Run records: the JSON schema, loading with validation, JUnit XML parsing, signatures, reconciliation.

A *record* is what one pytest run produced, keyed by node id::

    {
      "schema": "trtcap-record", "version": 1,
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
                 "categories": ["passed", "error"]}   # pytest's summary categories of its reports
      },
      "reconciliation": {"result": "COMPLETE|INCOMPLETE", "disagreements": [...], "sources": {...}},
      "stderr_tail": [...]               # only for runs that did not complete
    }

This module is imported by the recorder plugin inside swept pytest runs, so it stays light: no torch,
no rich, XML parsing imported on demand.
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import re
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

SCHEMA = "trtcap-record"
STREAM_SCHEMA = "trtcap-stream"
VERSION = 1

OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
FAILING = frozenset({"failed", "error"})
WHENS = ("setup", "call", "teardown", "collect", "crash")
#: Summary-line keys that correspond to test outcomes (others: warnings, deselected, rerun, ...).
SUMMARY_KEYS = OUTCOMES + ("deselected",)

COMPLETE = "COMPLETE"
INCOMPLETE = "INCOMPLETE"


class RecordError(Exception):
    """A file that cannot be used as a record. ``str()`` is one line naming the file and the problem."""

    def __init__(self, path: Any, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- signatures ---------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_ADDR = re.compile(r"0x[0-9a-fA-F]+")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# Long lowercase hex runs with at least one digit and one letter: hashes, object/cache ids.
_HEXID = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{12,}\b")
_WORKER = re.compile(r"\bgw\d+\b")
# Numbers that stand alone (not part of identifiers such as float32, sm_75 or x86_64).
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)*(?:[eE][-+]?\d+)?(?!\.?\d)")
_DIMS = re.compile(r"(?<![\w.])\d+(?:x\d+)+(?![\w.])")
_TYPE_LINE = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s?(.*))?$")
_SIGNATURE_BUDGET = 300


def _tmp_roots() -> List[str]:
    roots = {"/tmp", "/var/tmp", "/private/tmp", "/var/folders", "/private/var/folders"}
    for candidate in (tempfile.gettempdir(), os.environ.get("TMPDIR"), os.environ.get("PYTEST_DEBUG_TEMPROOT")):
        if candidate:
            roots.add(candidate.rstrip("/\\") or candidate)
            try:
                roots.add(os.path.realpath(candidate))
            except OSError:
                pass
    return sorted(roots, key=len, reverse=True)


_PATH_END = r"[^\s'\"(),;:\]\[<>]*"


def _tmp_pattern() -> "re.Pattern[str]":
    roots = "|".join(re.escape(r) for r in _tmp_roots())
    # pytest's basetemp: <root>/pytest-of-<user>/pytest-<n>/<test name><n>; any other temporary
    # directory: <root>/<random name>. The rest of the path is kept (its numbers are normalised later).
    return re.compile(
        rf"(?:{roots})(?:[/\\]pytest-of-[^/\\\s]+[/\\]pytest-(?:\d+|current)(?:[/\\]popen-gw\d+)?(?:[/\\][^/\\\s'\"]+?\d*(?=[/\\\s'\"]|$))?"
        rf"|[/\\][^/\\\s'\"(),;:]+)?"
    )


_TMP = _tmp_pattern()


def normalise(text: str) -> str:
    """Replace what varies between runs of the same failure: addresses, ids, temporary paths, numbers."""
    text = _ANSI.sub("", text)
    text = _ADDR.sub("<addr>", text)
    text = _UUID.sub("<uuid>", text)
    text = _TMP.sub("<tmp>", text)
    text = _HEXID.sub("<hex>", text)
    text = _WORKER.sub("gw<N>", text)
    text = _DIMS.sub(lambda m: "x".join("<N>" for _ in m.group().split("x")), text)
    text = _NUMBER.sub("<N>", text)
    return text


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def signature_from_message(message: Optional[str], default_type: str = "") -> Optional[str]:
    """``Type: normalised first line`` from a crash message such as ``ValueError: bad 0x7f..``."""
    if message is None:
        return None
    line = _first_line(_ANSI.sub("", str(message)))
    if not line:
        return default_type or None
    m = _TYPE_LINE.match(line)
    if m and m.group(1) not in ("assert",) and (m.group(2) is not None or "." in m.group(1) or m.group(1)[:1].isupper()):
        exc_type, rest = m.group(1), m.group(2) or ""
    elif line.startswith("assert ") or line == "assert":
        exc_type, rest = "AssertionError", line
    elif line.startswith("[XPASS(strict)]"):
        exc_type, rest = "XPASS(strict)", line[len("[XPASS(strict)]"):].strip()
    else:
        exc_type, rest = default_type, line
    rest = normalise(rest).strip()
    sig = f"{exc_type}: {rest}" if exc_type and rest else (exc_type or rest)
    if len(sig) > _SIGNATURE_BUDGET:
        sig = sig[: _SIGNATURE_BUDGET - 3] + "..."
    return sig


_E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_XDIST_CRASH = re.compile(r"^\s*worker '?gw\d+'? crashed while running", re.MULTILINE)


def is_worker_crash(text: Optional[str]) -> bool:
    return bool(text) and bool(_XDIST_CRASH.search(text))


def report_message(report: Any) -> Tuple[Optional[str], Optional[str]]:
    """(crash message, raw skip reason) of a pytest report (TestReport or CollectReport, also via xdist)."""
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return None, None
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:  # skip: (path, lineno, "Skipped: reason")
        text = str(longrepr[2])
        reason = text[len("Skipped: "):] if text.startswith("Skipped: ") else text
        return text, reason
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None) is not None:
        return str(crash.message), None
    if isinstance(longrepr, str):
        text = longrepr
    else:
        try:
            text = str(getattr(report, "longreprtext", "") or longrepr)
        except Exception:  # a longrepr that cannot render itself
            text = repr(longrepr)
    if is_worker_crash(text):
        return text, None
    # A rendered traceback (collection errors): its last "E   Type: message" line is the crash.
    errors = _E_LINE.findall(text)
    return (errors[-1] if errors else text), None


# --- one test out of its reports ------------------------------------------------------------------


def summarise_reports(reports: Iterable[Tuple[str, str, bool, Optional[str], Optional[str], Optional[str]]]) -> Dict[str, Any]:
    """Fold a test's reports into its record entry.

    Each report is ``(when, outcome, wasxfail, xfail_reason, message, skip_reason)`` where ``outcome`` is
    the report's passed/failed/skipped. Returns ``outcome``, ``signature``, ``reason`` and ``when``.
    """
    by_when: Dict[str, tuple] = {}
    for rep in reports:
        by_when[rep[0]] = rep  # a rerun replaces the earlier attempt
    outcome, decided, reason = None, None, None
    setup, call, teardown = by_when.get("setup"), by_when.get("call"), by_when.get("teardown")
    crash = next((r for w, r in by_when.items() if w not in ("setup", "call", "teardown")), None)
    if setup is not None and setup[1] == "failed":
        outcome, decided = "error", setup
    elif setup is not None and setup[1] == "skipped":
        outcome, decided = ("xfailed" if setup[2] else "skipped"), setup
    elif call is not None:
        decided = call
        if call[1] == "failed":
            outcome = "failed"
        elif call[1] == "skipped":
            outcome = "xfailed" if call[2] else "skipped"
        else:
            outcome = "xpassed" if call[2] else "passed"
    if crash is not None and crash[1] == "failed":
        outcome, decided = "failed", crash
    if teardown is not None and teardown[1] == "failed" and outcome not in FAILING:
        outcome, decided = "error", teardown
    if outcome is None:  # setup passed and nothing else arrived: the run stopped inside the test
        last = setup or teardown
        outcome, decided = "error", (last[0] if last else "setup", "failed", False, None,
                                     "Interrupted: the test never reported its call phase", None)
    when = decided[0] if decided[0] in WHENS else "crash"
    message = decided[4]
    if outcome in ("passed",):
        signature = None
    elif outcome == "xpassed":
        signature, reason = None, decided[3]
    elif outcome == "skipped":
        reason = decided[5]
        signature = signature_from_message(message, "Skipped")
    elif outcome == "xfailed":
        reason = decided[3]
        signature = signature_from_message(message, "XFAIL")
    else:
        if when == "crash" or is_worker_crash(message):
            when = "crash"
            signature = "WorkerCrashed: " + normalise(_first_line(message or "worker crashed"))
        else:
            signature = signature_from_message(message, "Error" if outcome == "error" else "Failure")
    return {"outcome": outcome, "signature": signature, "reason": reason, "when": when}


# --- the stream the recorder plugin writes -----------------------------------------------------------


def read_stream(path: Any) -> Dict[str, Any]:
    """Read the recorder's JSON-lines stream; tolerant of a run that died mid-write.

    Returns ``meta`` (the header), ``tests``, ``collected``, ``deselected``, ``finished``, ``exitstatus``,
    ``running`` (started but unfinished node ids) and ``bad_lines``.
    """
    raw = _read_bytes(path, missing="missing: pytest did not start the recorder (no stream written)")
    lines = raw.decode("utf-8", errors="replace").split("\n")
    out: Dict[str, Any] = {
        "meta": None, "tests": {}, "collected": None, "deselected": 0, "finished": False,
        "exitstatus": None, "running": [], "bad_lines": 0, "collected_counts": [],
    }
    started: Dict[str, None] = {}
    tests = out["tests"]
    last = len(lines) - 1
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            if number != last:  # a torn final line is the expected shape of a killed run
                out["bad_lines"] += 1
            continue
        if not isinstance(event, dict):
            out["bad_lines"] += 1
            continue
        kind = event.get("e")
        if kind is None and event.get("schema") == STREAM_SCHEMA:
            out["meta"] = event
        elif kind == "start":
            started[event.get("id")] = None
        elif kind == "test":
            nodeid = event.pop("id", None)
            event.pop("e", None)
            if isinstance(nodeid, str):
                tests[nodeid] = event
                started.pop(nodeid, None)
        elif kind == "collected":
            n = event.get("n")
            if isinstance(n, int):
                out["collected_counts"].append(n)
                out["collected"] = n if out["collected"] is None else max(out["collected"], n)
            if isinstance(event.get("deselected"), int):
                out["deselected"] = max(out["deselected"], event["deselected"])
        elif kind == "deselected":
            if isinstance(event.get("n"), int):
                out["deselected"] = max(out["deselected"], event["n"])
        elif kind == "finish":
            out["finished"] = True
            out["exitstatus"] = event.get("exitstatus")
    if out["meta"] is None and not tests and not out["finished"]:
        raise RecordError(path, "not a trtcap recorder stream (no header line)")
    out["running"] = [n for n in started if isinstance(n, str)]
    return out


# --- pytest's own accounts -------------------------------------------------------------------------

_SUMMARY_LINE = re.compile(
    r"^=*\s*(?P<body>no tests ran|\d+ [a-z]+(?:, \d+ [a-z]+)*)\s+in\s+[\d.]+s(?:\s+\([\d:.]+\))?\s*=*\s*$"
)
_PLURALS = {"errors": "error", "warnings": "warning", "tests": "test"}


def parse_summary_line(text: str) -> Optional[Tuple[str, Dict[str, int]]]:
    """Find pytest's final ``N passed, M failed ... in Xs`` line in ``text``; ``(line, counts)`` or None."""
    for raw in reversed(text.splitlines()):
        line = _ANSI.sub("", raw).strip()
        m = _SUMMARY_LINE.match(line)
        if not m:
            continue
        counts: Dict[str, int] = {}
        body = m.group("body")
        if body != "no tests ran":
            for part in body.split(", "):
                n, key = part.split(" ", 1)
                key = _PLURALS.get(key, key)
                counts[key] = counts.get(key, 0) + int(n)
        return line.strip("= ").strip(), counts
    return None


def expected_summary(tests: Mapping[str, Mapping[str, Any]], deselected: int = 0) -> Dict[str, int]:
    """What pytest's summary line should say for these tests (it counts reports, not tests)."""
    counts = dict.fromkeys(SUMMARY_KEYS, 0)
    for entry in tests.values():
        cats = entry.get("categories")
        if not cats:
            cats = [entry.get("outcome")]
        for cat in cats:
            if cat in counts:
                counts[cat] += 1
    counts["deselected"] = deselected
    return counts


# --- JUnit XML -------------------------------------------------------------------------------------

_ILLEGAL_XML = re.compile("[^\u0009\u000a\u000d\u0020-\u007e\u0080-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_JUNIT_RANK = {"passed": 0, "skipped": 1, "failure": 2, "error": 3}
_JUNIT_OUTCOME = {"passed": "passed", "skipped": "skipped", "failure": "failed", "error": "error"}


def _xml_escape_like_pytest(text: str) -> str:
    def repl(m: "re.Match[str]") -> str:
        i = ord(m.group())
        return f"#x{i:02X}" if i <= 0xFF else f"#x{i:04X}"

    return _ILLEGAL_XML.sub(repl, text)


def junit_key(nodeid: str) -> str:
    """The ``classname::name`` pytest's junitxml writes for ``nodeid`` (no junit_prefix)."""
    path, sep, tail = nodeid.partition("::")
    if sep:
        name_part, bracket, params = tail.partition("[")
        names = [path, *name_part.split("::")]
        if bracket:
            names[-1] += "[" + params
    else:
        names = [path]
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    return ".".join(names[:-1]) + "::" + _xml_escape_like_pytest(names[-1])


def junit_status(outcome: str, categories: Optional[Iterable[str]] = None) -> str:
    """The testcase status (passed/skipped/failure/error) junitxml writes for a test."""
    worst = "passed"
    for cat in categories or (outcome,):
        status = {"failed": "failure", "error": "error", "skipped": "skipped", "xfailed": "skipped"}.get(cat, "passed")
        if _JUNIT_RANK[status] > _JUNIT_RANK[worst]:
            worst = status
    return worst


_JUNIT_PHASE = re.compile(r'^failed on (?:setup|teardown) with "(.*)"$', re.DOTALL)


_JUNIT_COLLECT_SKIP = re.compile(r"""['"]Skipped: (.*)['"]\)\s*$""", re.DOTALL)


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_junit(path: Any) -> Dict[str, Any]:
    """Parse a JUnit XML report pytest wrote.

    Returns ``cases`` (key -> dict(status, outcome, signature, reason)), ``elements`` (testcase count) and
    ``suite`` (summed tests/failures/errors/skipped attributes). Raises RecordError for missing, empty,
    truncated or foreign files.
    """
    import xml.etree.ElementTree as ET

    data = _read_bytes(path)
    if not data.strip():
        raise RecordError(path, "empty file (0 bytes of XML)" if not data else "empty file (only whitespace)")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        msg = str(exc)
        kind = "truncated XML" if "no element found" in msg or "unclosed token" in msg else "malformed XML"
        raise RecordError(path, f"{kind} ({msg})") from None
    tag = _local(root.tag)
    if tag not in ("testsuites", "testsuite"):
        raise RecordError(path, f"not a JUnit XML report (root element <{tag}>, expected <testsuites> or <testsuite>)")
    suites = [root] if tag == "testsuite" else [s for s in root if _local(s.tag) == "testsuite"]
    suite_counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    cases: Dict[str, Dict[str, Any]] = {}
    elements = 0
    for suite in suites:
        for key in suite_counts:
            try:
                suite_counts[key] += int(suite.get(key, "0"))
            except ValueError:
                raise RecordError(path, f"testsuite attribute {key}={suite.get(key)!r} is not a number") from None
        for case in suite.iter():
            if _local(case.tag) != "testcase":
                continue
            elements += 1
            classname, name = case.get("classname", ""), case.get("name", "")
            key = f"{classname}::{name}"
            status, outcome, signature, reason = "passed", "passed", None, None
            for child in case:
                ctag = _local(child.tag)
                message = child.get("message")
                if ctag == "error":
                    cstat, cout = "error", "error"
                    m = _JUNIT_PHASE.match(message or "")
                    message = m.group(1) if m else message
                    if message == "collection failure":  # the crash is the traceback's last "E   " line
                        lines = _E_LINE.findall(child.text or "")
                        message = lines[-1] if lines else message
                    sig = signature_from_message(message, "Error")
                    rsn = None
                elif ctag == "failure":
                    cstat, cout = "failure", "failed"
                    sig = signature_from_message(message, "Failure")
                    rsn = None
                elif ctag == "skipped":
                    cstat = "skipped"
                    if child.get("type") == "pytest.xfail":
                        cout, rsn = "xfailed", message
                        sig = None
                    else:
                        if message == "collection skipped":  # text: ('path', lineno, 'Skipped: reason')
                            m = _JUNIT_COLLECT_SKIP.search(child.text or "")
                            message = m.group(1) if m else message
                        cout, rsn = "skipped", message
                        sig = signature_from_message("Skipped: " + (message or ""), "Skipped")
                else:
                    continue
                if _JUNIT_RANK[cstat] >= _JUNIT_RANK[status]:
                    status, outcome, signature, reason = cstat, cout, sig, rsn
            prev = cases.get(key)
            if prev is None or _JUNIT_RANK[status] >= _JUNIT_RANK[prev["status"]]:
                cases[key] = {"status": status, "outcome": outcome, "signature": signature, "reason": reason}
    return {"cases": cases, "elements": elements, "suite": suite_counts}


# --- loading ----------------------------------------------------------------------------------------


def _read_bytes(path: Any, missing: str = "no such file") -> bytes:
    """The file's bytes; a RecordError naming the file and what is wrong otherwise."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise RecordError(path, missing) from None
    except IsADirectoryError:
        raise RecordError(path, "is a directory, not a file") from None
    except PermissionError:
        raise RecordError(path, "permission denied") from None
    except OSError as exc:
        raise RecordError(path, f"cannot read: {exc.strerror or exc}") from None


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

    def counts(self) -> Dict[str, int]:
        return outcome_counts(self.tests)

    def by_junit_key(self) -> "Record":
        """The same record keyed like a JUnit report (to compare against one)."""
        tests = {}
        for nodeid, entry in self.tests.items():
            # JUnit XML writes a non-strict XPASS as a pass, and a failure plus a teardown error as an error
            outcome = entry["outcome"]
            status = junit_status(outcome, entry.get("categories"))
            seen = _JUNIT_OUTCOME.get(status, outcome) if outcome not in ("xfailed",) else outcome
            if seen != outcome:  # the signature then belongs to another phase: leave it out of comparisons
                entry = dict(entry, outcome=seen, signature=None)
            tests[junit_key(nodeid)] = entry
        data = dict(self.data)
        data["tests"] = tests
        return Record(self.path, data, self.source)


def outcome_counts(tests: Mapping[str, Mapping[str, Any]]) -> Dict[str, int]:
    counts = dict.fromkeys(OUTCOMES, 0)
    for entry in tests.values():
        counts[entry["outcome"]] = counts.get(entry["outcome"], 0) + 1
    return counts


def _json_problem(text: str, exc: json.JSONDecodeError) -> str:
    where = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    # An unterminated string runs to the end of the file; any other error at the very end means the
    # document stopped before its closing brackets: both are what a cut-off write looks like.
    if exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()):
        return f"truncated JSON (the file ends early: {where})"
    return f"invalid JSON ({where})"


def validate_record(path: Any, data: Any) -> Dict[str, Any]:
    """Check a parsed JSON object is a trtcap record; raise RecordError naming what is wrong."""
    if not isinstance(data, dict):
        kind = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}.get(type(data), "null")
        raise RecordError(path, f"not a trtcap record (top level is a JSON {kind}, expected an object with \"schema\": \"{SCHEMA}\")")
    schema = data.get("schema")
    if schema != SCHEMA:
        if schema is None:
            keys = ", ".join(sorted(map(str, data))[:6]) or "none"
            raise RecordError(path, f"not a trtcap record (no \"schema\": \"{SCHEMA}\"; top-level keys: {keys})")
        raise RecordError(path, f"not a trtcap record (schema is {schema!r}, expected {SCHEMA!r})")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise RecordError(path, f"record has no valid \"version\" (got {version!r})")
    if version > VERSION:
        raise RecordError(path, f"record version {version} is newer than this trtcap understands ({VERSION})")
    tests = data.get("tests")
    if not isinstance(tests, dict):
        raise RecordError(path, f"record's \"tests\" must be an object keyed by node id (got {type(tests).__name__})")
    for nodeid, entry in tests.items():
        if not isinstance(entry, dict):
            raise RecordError(path, f"test {nodeid!r}: entry must be an object")
        outcome = entry.get("outcome")
        if outcome not in OUTCOMES:
            raise RecordError(path, f"test {nodeid!r}: invalid outcome {outcome!r} (expected one of {', '.join(OUTCOMES)})")
        sig = entry.get("signature")
        if sig is not None and not isinstance(sig, str):
            raise RecordError(path, f"test {nodeid!r}: signature must be a string or null")
    rec = data.get("reconciliation")
    if rec is not None and (not isinstance(rec, dict) or rec.get("result") not in (COMPLETE, INCOMPLETE)):
        raise RecordError(path, "record's \"reconciliation\" must be an object with result COMPLETE or INCOMPLETE")
    return data


def record_from_junit(path: Any, parsed: Dict[str, Any]) -> Record:
    tests = {}
    for key, case in parsed["cases"].items():
        tests[key] = {"outcome": case["outcome"], "signature": case["signature"], "reason": case["reason"]}
    data = {
        "schema": SCHEMA, "version": VERSION, "arm": None, "label": os.path.basename(str(path)),
        "source": "junit", "tests": tests,
    }
    return Record(path, data, "junit")


def load_record(path: Any) -> Record:
    """Load a record JSON, a recorder stream, or a JUnit XML report; RecordError on anything else."""
    raw = _read_bytes(path)
    if not raw.strip():
        raise RecordError(path, "empty file (0 bytes)" if not raw else "empty file (only whitespace)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecordError(path, f"not a text file (invalid UTF-8 at byte {exc.start})") from None
    head = text.lstrip()
    if head.startswith("<"):
        return record_from_junit(path, parse_junit(path))
    if not head.startswith(("{", "[")):
        raise RecordError(path, "neither a trtcap record (JSON) nor a JUnit XML report")
    gc_enabled = gc.isenabled()
    gc.disable()  # decoding 100k small dicts otherwise spends half its time in cyclic GC passes
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        first = head.split("\n", 1)[0]
        if f'"{STREAM_SCHEMA}"' in first:
            return record_from_stream(path)
        raise RecordError(path, _json_problem(text, exc)) from None
    finally:
        if gc_enabled:
            gc.enable()
    if isinstance(data, dict) and data.get("schema") == STREAM_SCHEMA:
        return record_from_stream(path)
    return Record(path, validate_record(path, data))


def record_from_stream(path: Any, **kwargs: Any) -> Record:
    stream = read_stream(path)
    data = build_record(stream, **kwargs)
    return Record(path, data, "stream")


# --- reconciliation ---------------------------------------------------------------------------------


def _signal_name(code: int) -> str:
    try:
        import signal

        return signal.Signals(-code).name
    except (ValueError, ImportError):
        return f"signal {-code}"


def _diff_text(label: str, theirs: Mapping[str, int], ours: Mapping[str, int], keys: Iterable[str]) -> Tuple[int, str]:
    parts, total = [], 0
    for key in keys:
        a, b = theirs.get(key, 0), ours.get(key, 0)
        if a != b:
            parts.append(f"{key} {a} vs {b}")
            total += abs(a - b)
    return total, ", ".join(parts)


def reconcile(
    stream: Mapping[str, Any],
    *,
    returncode: Optional[int] = None,
    stdout: Optional[str] = None,
    junit_path: Any = None,
) -> Dict[str, Any]:
    """Cross-check the recorder's stream against pytest's own accounts.

    Sources: the collected count, the final summary line (when ``stdout`` is given), the JUnit XML
    (when ``junit_path`` is given), and the process exit status. ``COMPLETE`` only when all agree.
    """
    tests = stream["tests"]
    items = {k: v for k, v in tests.items() if v.get("when") != "collect"}
    collect_errors = len(tests) - len(items)
    disagreements: List[str] = []
    sources: Dict[str, Any] = {"record": {"tests": len(items), "collection_reports": collect_errors,
                                          "counts": outcome_counts(tests)}}
    finished, exitstatus, running = stream.get("finished"), stream.get("exitstatus"), stream.get("running") or []

    # the process
    process = {"returncode": returncode, "session_exitstatus": exitstatus, "finished": bool(finished)}
    sources["process"] = process
    if returncode is not None and returncode < 0:
        where = f" while running {', '.join(running[:3])}" if running else ""
        disagreements.append(f"process: pytest was killed by {_signal_name(returncode)}{where}")
    elif not finished:
        where = f" while running {', '.join(running[:3])}" if running else ""
        code = f" with exit code {returncode}" if returncode is not None else ""
        disagreements.append(f"process: pytest exited{code} before the session finished{where}")
    elif returncode is not None and exitstatus is not None and returncode != exitstatus:
        disagreements.append(f"process: exit code {returncode} but the session ended with status {exitstatus}")
    if finished and exitstatus in (2, 3, 4):
        meaning = {2: "interrupted", 3: "internal error", 4: "usage error"}[exitstatus]
        disagreements.append(f"process: pytest's exit status is {exitstatus} ({meaning})")

    # the collected count
    collected = stream.get("collected")
    sources["collected"] = collected
    counts_seen = set(stream.get("collected_counts") or [])
    if len(counts_seen) > 1:
        disagreements.append(f"collected: workers collected different counts ({', '.join(map(str, sorted(counts_seen)))})")
    if collected is None:
        if finished or items:
            disagreements.append("collected: the run never reported its collected count")
    elif collected != len(items):
        missing = collected - len(items)
        if missing > 0:
            disagreements.append(f"collected: {collected} tests collected, the record has results for {len(items)} ({missing} missing)")
        else:
            disagreements.append(f"collected: {collected} tests collected, the record has {len(items)} ({-missing} more)")
    crashed = [n for n, e in items.items() if e.get("when") == "crash"]
    if crashed:
        disagreements.append(f"record: {len(crashed)} test(s) lost to a crashed worker: {', '.join(crashed[:3])}")
    if stream.get("bad_lines"):
        disagreements.append(f"record: {stream['bad_lines']} unreadable line(s) in the recorder's stream")

    # the summary line
    if stdout is not None:
        found = parse_summary_line(stdout)
        expected = expected_summary(tests, stream.get("deselected") or 0)
        if found is None:
            sources["summary"] = None
            disagreements.append(
                f"summary: no final summary line in pytest's output (the record has {len(tests)} result(s); "
                "was pytest killed, or run with -qq / -p no:terminal?)"
            )
        else:
            line, counts = found
            sources["summary"] = {"line": line, "counts": counts}
            total, text = _diff_text("summary", counts, expected, SUMMARY_KEYS)
            if total:
                disagreements.append(f"summary: pytest's summary line differs from the record by {total} test(s) ({text}; summary vs record)")

    # the JUnit XML
    if junit_path is not None:
        try:
            parsed = parse_junit(junit_path)
        except RecordError as exc:
            sources["junit"] = {"path": str(junit_path), "error": exc.problem}
            disagreements.append(f"junit: {exc}")
        else:
            expected_cases: Dict[str, str] = {}
            for nodeid, entry in tests.items():
                key = junit_key(nodeid)
                status = junit_status(entry["outcome"], entry.get("categories"))
                prev = expected_cases.get(key)
                if prev is None or _JUNIT_RANK[status] > _JUNIT_RANK[prev]:
                    expected_cases[key] = status
            cases = parsed["cases"]
            only_xml = sum(1 for k in cases if k not in expected_cases)
            only_record = sum(1 for k in expected_cases if k not in cases)
            differ = sum(1 for k, s in expected_cases.items() if k in cases and cases[k]["status"] != s)
            jcounts = dict.fromkeys(_JUNIT_RANK, 0)
            for case in cases.values():
                jcounts[case["status"]] += 1
            sources["junit"] = {"path": str(junit_path), "tests": len(cases), "elements": parsed["elements"],
                                "counts": jcounts, "suite": parsed["suite"]}
            parts = []
            if only_record:
                parts.append(f"{only_record} test(s) in the record are missing from the XML")
            if only_xml:
                parts.append(f"{only_xml} test(s) in the XML are missing from the record")
            if differ:
                parts.append(f"{differ} test(s) have a different outcome")
            if parts:
                disagreements.append(f"junit: {junit_path}: " + "; ".join(parts))

    return {"result": INCOMPLETE if disagreements else COMPLETE, "disagreements": disagreements, "sources": sources}


def build_record(
    stream: Mapping[str, Any],
    *,
    arm: Optional[str] = None,
    label: Optional[str] = None,
    returncode: Optional[int] = None,
    stdout: Optional[str] = None,
    junit_path: Any = None,
    stderr_tail: Optional[List[str]] = None,
) -> Dict[str, Any]:
    """A record (the JSON schema above) from a recorder stream plus pytest's other accounts."""
    meta = stream.get("meta") or {}
    if arm is None:
        arm = meta.get("arm")
    reconciliation = reconcile(stream, returncode=returncode, stdout=stdout, junit_path=junit_path)
    data: Dict[str, Any] = {
        "schema": SCHEMA,
        "version": VERSION,
        "arm": arm,
        "label": label or (f"arm {arm}" if arm else None),
        "created": utc_now(),
        "pytest": {
            "version": meta.get("pytest"),
            "args": meta.get("args"),
            "rootdir": meta.get("rootdir"),
            "exitstatus": stream.get("exitstatus"),
            "returncode": returncode,
        },
        "collected": stream.get("collected"),
        "deselected": stream.get("deselected") or 0,
        "finished": bool(stream.get("finished")),
        "running": list(stream.get("running") or []),
        "tests": dict(stream["tests"]),
        "reconciliation": reconciliation,
    }
    if reconciliation["result"] != COMPLETE and stderr_tail:
        data["stderr_tail"] = list(stderr_tail)
    return data


def dump_record(data: Mapping[str, Any], path: Any) -> None:
    """Write a record: header fields indented, one test per line (diffable, and fast for 100k tests)."""
    head = {k: v for k, v in data.items() if k != "tests"}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        text = json.dumps(head, indent=2, ensure_ascii=False)
        fh.write(text[:-2] + ",\n" if head else "{\n")
        fh.write('  "tests": {')
        first = True
        dumps = json.dumps
        for nodeid, entry in data["tests"].items():
            fh.write(("\n    " if first else ",\n    ") + dumps(nodeid, ensure_ascii=False) + ": " + dumps(entry, ensure_ascii=False))
            first = False
        fh.write("\n  }\n}\n" if not first else "}\n}\n")
    os.replace(tmp, path)
