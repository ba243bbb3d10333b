"""JUnit XML as an input format: ``trtcap compare`` reads reports pytest (or CI) wrote elsewhere.

Test names are matched with pytest's own JUnit naming (``_pytest.junitxml``), never a copy of it. Files
in any encoding XML allows (an encoding declaration, a byte-order mark, UTF-16) are read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from .record import RecordError, read_bytes
from .signatures import E_LINE, first_line, signature_from_message

RANK = {"passed": 0, "skipped": 1, "failure": 2, "error": 3}
STATUS_OUTCOME = {"passed": "passed", "skipped": "skipped", "failure": "failed", "error": "error"}
_PHASE = re.compile(r'^failed on (?:setup|teardown) with "(.*)"$', re.DOTALL)
_COLLECT_SKIP = re.compile(r"""['"]Skipped: (.*)['"]\)\s*$""", re.DOTALL)
_STARTS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"),
         (b"", "latin-1"))


_ESCAPED = re.compile(r"#x([0-9A-F]{4}|[0-9A-F]{2})")


def _unescape(message: str | None) -> str | None:
    """Undo pytest's ``bin_xml_escape`` (``#x1B`` for a character XML cannot hold), deciding with pytest's own
    function, so a message read back has the signature the recorder gave the same failure."""
    if not message or "#x" not in message:
        return message
    from _pytest.junitxml import bin_xml_escape

    def back(m: re.Match) -> str:
        for digits in (m.group(1), m.group(1)[:2]):
            char = chr(int(digits, 16))
            if bin_xml_escape(char) == "#x" + digits:
                return char + m.group(1)[len(digits):]
        return m.group(0)

    return _ESCAPED.sub(back, message)


def looks_like_xml(data: bytes) -> bool:
    """Whether ``data`` starts like an XML document in any encoding XML allows (a BOM, UTF-16, 8-bit)."""
    if data[:2] in (b"<\x00", b"\x00<"):  # UTF-16 without a byte-order mark
        return True
    for bom, codec in _STARTS:
        if data.startswith(bom):
            return data[len(bom):len(bom) + 400].decode(codec, "ignore").lstrip().startswith("<")
    return False


def junit_key(nodeid: str) -> str:
    """The ``classname::name`` pytest's junitxml writes for ``nodeid`` (no junit_prefix)."""
    from _pytest.junitxml import bin_xml_escape, mangle_test_address

    names = mangle_test_address(nodeid)
    return ".".join(names[:-1]) + "::" + bin_xml_escape(names[-1])


def junit_status(outcome: str, categories: Iterable[str] | None = None) -> str:
    """The testcase status (passed/skipped/failure/error) junitxml writes for a test."""
    worst = "passed"
    for cat in categories or (outcome,):
        status = {"failed": "failure", "error": "error", "skipped": "skipped", "xfailed": "skipped"}.get(cat, "passed")
        if RANK[status] > RANK[worst]:
            worst = status
    return worst


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _typed(message: str | None, exc_type: str | None) -> str | None:
    """``message`` led by the exception type a writer gave in its own ``type`` attribute, as pytest writes it
    (unittest-xml-reporting: ``type="ValueError" message="bad"``; pytest: ``message="ValueError: bad"``)."""
    if not exc_type:
        return message
    head = first_line(message or "").split(":", 1)[0]
    if head == exc_type or head.endswith("." + exc_type):  # the message names it already
        return message
    return f"{exc_type}: {message}" if message else exc_type


def _child_result(child: Any) -> tuple[str, str, str | None, str | None] | None:
    """(status, outcome, signature, reason) of a <failure>/<error>/<skipped> element, None for others."""
    tag, message = _local(child.tag), _unescape(child.get("message"))
    if tag == "error":
        m = _PHASE.match(message or "")
        message = m.group(1) if m else _typed(message, child.get("type"))
        if message == "collection failure":  # the crash is the traceback's last "E   " line
            lines = E_LINE.findall(child.text or "")
            message = lines[-1] if lines else message
        return "error", "error", signature_from_message(message, "Error"), None
    if tag == "failure":
        return "failure", "failed", signature_from_message(_typed(message, child.get("type")), "Failure"), None
    if tag == "skipped":
        if child.get("type") == "pytest.xfail":
            return "skipped", "xfailed", None, message
        if message == "collection skipped":  # text: ('path', lineno, 'Skipped: reason')
            m = _COLLECT_SKIP.search(child.text or "")
            message = m.group(1) if m else message
        return "skipped", "skipped", signature_from_message("Skipped: " + (message or ""), "Skipped"), message
    return None


def _case(case: Any) -> dict[str, Any]:
    status, outcome, signature, reason = "passed", "passed", None, None
    for child in case:
        found = _child_result(child)
        if found is not None and RANK[found[0]] >= RANK[status]:
            status, outcome, signature, reason = found
    return {"status": status, "outcome": outcome, "signature": signature, "reason": reason}


def _root(path: Any, data: bytes | None) -> Any:
    import xml.etree.ElementTree as ET

    data = read_bytes(path) if data is None else data
    if not data.strip():
        raise RecordError(path, "empty file (0 bytes of XML)" if not data else "empty file (only whitespace)")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        msg = str(exc)
        kind = "truncated XML" if "no element found" in msg or "unclosed token" in msg else "malformed XML"
        raise RecordError(path, f"{kind} ({msg})") from None
    except (ValueError, LookupError, RecursionError) as exc:  # an unknown encoding, a document nested too deep
        raise RecordError(path, f"unreadable XML ({type(exc).__name__}: {str(exc)[:200]})") from None


def parse_junit(path: Any, data: bytes | None = None) -> dict[str, Any]:
    """Parse a JUnit XML report: ``cases`` (key -> status, outcome, signature, reason), ``elements``
    (testcase count) and ``suite`` (summed tests/failures/errors/skipped attributes). RecordError for
    missing, empty, truncated or foreign files. ``data``: the file's bytes, already read (a pipe reads once).
    """
    root = _root(path, data)
    tag = _local(root.tag)
    if tag not in ("testsuites", "testsuite"):
        raise RecordError(path, f"not a JUnit XML report (root element <{tag}>, expected <testsuites> or <testsuite>)")
    suites = [root] if tag == "testsuite" else [s for s in root if _local(s.tag) == "testsuite"]
    suite_counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
    cases: dict[str, dict[str, Any]] = {}
    elements = 0
    for suite in suites:
        for key in suite_counts:
            value = suite.get(key, "0")
            if not (value.isascii() and value.isdigit() and len(value) < 19):
                raise RecordError(path, f"testsuite attribute {key}={value[:40]!r} is not a number")
            suite_counts[key] += int(value)
        for case in suite.iter():
            if _local(case.tag) != "testcase":
                continue
            elements += 1
            key = f"{case.get('classname', '')}::{case.get('name', '')}"
            found, prev = _case(case), cases.get(key)
            if prev is None or RANK[found["status"]] >= RANK[prev["status"]]:
                cases[key] = found
    return {"cases": cases, "elements": elements, "suite": suite_counts}
