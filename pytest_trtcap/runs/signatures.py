"""Failure signatures: what a failure *is*, stable across runs (exception type and normalised first line).

Two runs of the same failure differ in addresses, ids, temporary paths and numbers; a signature replaces
those so that "same status, different signature" means a different failure, not a different run.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, List, NamedTuple, Optional

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
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



def _tmp_pattern() -> re.Pattern[str]:
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
    text = ANSI.sub("", text)
    text = _ADDR.sub("<addr>", text)
    text = _UUID.sub("<uuid>", text)
    text = _TMP.sub("<tmp>", text)
    text = _HEXID.sub("<hex>", text)
    text = _WORKER.sub("gw<N>", text)
    text = _DIMS.sub(lambda m: "x".join("<N>" for _ in m.group().split("x")), text)
    text = _NUMBER.sub("<N>", text)
    return text


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def signature_from_message(message: Optional[str], default_type: str = "") -> Optional[str]:
    """``Type: normalised first line`` from a crash message such as ``ValueError: bad 0x7f..``."""
    if message is None:
        return None
    line = first_line(ANSI.sub("", str(message)))
    if not line:
        return default_type or None
    m = _TYPE_LINE.match(line)
    if m and m.group(1) not in ("assert",) and (
        m.group(2) is not None or "." in m.group(1) or m.group(1)[:1].isupper()
    ):
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


E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_XDIST_CRASH = re.compile(r"^\s*worker '?gw\d+'? crashed while running", re.MULTILINE)


def is_worker_crash(text: Optional[str]) -> bool:
    """Whether a message is pytest-xdist's account of a worker that died under a test."""
    return bool(text) and bool(_XDIST_CRASH.search(text))


class Message(NamedTuple):
    """What a report says: its crash message, and the raw reason when it is a skip."""

    text: Optional[str]
    skip_reason: Optional[str] = None


def report_message(report: Any) -> Message:
    """The message of a pytest report (TestReport or CollectReport, also via xdist)."""
    longrepr = getattr(report, "longrepr", None)
    if longrepr is None:
        return Message(None)
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:  # skip: (path, lineno, "Skipped: reason")
        text = str(longrepr[2])
        reason = text[len("Skipped: "):] if text.startswith("Skipped: ") else text
        return Message(text, reason)
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None and getattr(crash, "message", None) is not None:
        return Message(str(crash.message))
    if isinstance(longrepr, str):
        text = longrepr
    else:
        try:
            text = str(getattr(report, "longreprtext", "") or longrepr)
        except Exception:  # a longrepr that cannot render itself
            text = repr(longrepr)
    if is_worker_crash(text):
        return Message(text)
    # A rendered traceback (collection errors): its last "E   Type: message" line is the crash.
    errors = E_LINE.findall(text)
    return Message(errors[-1] if errors else text)

