"""Failure signatures: what a failure *is*, stable across runs (exception type and normalised first line).

Two runs of the same failure differ in addresses, ids, temporary paths and numbers; a signature replaces
those so that "same status, different signature" means a different failure, not a different run.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Any, NamedTuple

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


def _tmp_roots() -> list[str]:
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
_STRUCTURE = re.compile(r"""[{}()\[\],'"]""")
_CLOSER = {"{": "}", "(": ")", "[": "]"}
#: Brackets nested deeper than this inside a brace group are kept as written: each level copies its text once.
_MAX_DEPTH = 16
#: A brace group still open this far into a text keeps its order (the scan is a Python loop: a 30 MB message
#: of commas would take a minute).
_SORT_LIMIT = 1 << 18


class _Group:
    """A bracket opened inside a brace group: for a brace, its top-level elements so far."""

    __slots__ = ("opener", "elements", "pieces", "raw")

    def __init__(self, opener: str) -> None:
        self.opener, self.raw = opener, False
        self.elements: list[str] = []
        self.pieces: list[str] = []

    def written(self) -> str:
        return self.opener + ",".join([*self.elements, "".join(self.pieces)])

    def closed(self) -> str:
        if self.opener != "{" or self.raw:
            return self.written() + _CLOSER[self.opener]
        items = sorted(item.strip() for item in [*self.elements, "".join(self.pieces)])
        return "{" + ", ".join(items) + "}" if items != [""] else "{}"


def _string_end(text: str, start: int, quote: str, limit: int) -> int:
    """Where the string literal whose opening ``quote`` is at ``start`` ends (past its closing quote); -1 if it
    does not before ``limit``."""
    pos = start + 1
    while True:
        end = text.find(quote, pos, limit)
        if end < 0:
            return -1
        escapes = end
        while escapes > pos and text[escapes - 1] == "\\":
            escapes -= 1
        if (end - escapes) % 2 == 0:
            return end + 1
        pos = end + 1


def _opens_string(text: str, at: int) -> bool:
    """A quote opens a string literal where a repr would put one: not inside a word (``can't``)."""
    return at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")


class _BraceSorter:
    """One left-to-right scan of a text, sorting each brace group's top-level elements as it closes."""

    def __init__(self, text: str, limit: int) -> None:
        self.text, self.limit, self.shown = text, limit, 0
        self.out: list[str] = []
        self.stack: list[_Group] = []
        self.unclosed: set = set()  # quote characters that no later quote closes
        self.deep = 0  # brackets opened past _MAX_DEPTH: kept as written

    def _emit(self, piece: str) -> None:
        if self.stack:
            self.stack[-1].pieces.append(piece)
        else:
            self.out.append(piece)
            self.shown += len(piece)

    def run(self, keep: int) -> str:
        text, pos = self.text, 0
        while pos < len(text):
            if not self.stack:  # a group that would start past what the caller keeps is left alone
                start = text.find("{", pos, pos + max(0, keep - self.shown))
                self._emit(text[pos:] if start < 0 else text[pos:start])
                if start < 0:
                    break
                self.stack.append(_Group("{"))
                pos = start + 1
                continue
            m = _STRUCTURE.search(text, pos, self.limit)
            self._emit(text[pos:m.start() if m else len(text)])
            if m is None:
                break
            pos = self._token(m.group(), m.start())
        while self.stack:  # brackets never closed (or still open at the limit): as written
            self._emit(self.stack.pop().written())
        return "".join(self.out)

    def _token(self, char: str, at: int) -> int:
        """Take the structural character at ``at``; return where the scan goes on."""
        top = self.stack[-1]
        if char in "'\"":
            return self._quote(char, at)
        if char in _CLOSER and (self.deep or len(self.stack) >= _MAX_DEPTH):
            self.deep += 1
            top.pieces.append(char)
        elif char in _CLOSER:
            self.stack.append(_Group(char))
        elif char == "," and top.opener == "{" and not self.deep:
            top.elements.append("".join(top.pieces))
            top.pieces = []
        elif char != "," and not self.deep and _CLOSER[top.opener] == char:
            self.stack.pop()
            self._emit(top.closed())
        else:  # a comma below a brace's top level, a closer that matches no open bracket
            self.deep -= 1 if self.deep and char != "," else 0
            top.pieces.append(char)
        return at + 1

    def _quote(self, quote: str, at: int) -> int:
        """A string literal, where commas and brackets do not count, is skipped with one ``find``."""
        opens = quote not in self.unclosed and _opens_string(self.text, at)
        end = _string_end(self.text, at, quote, self.limit) if opens else -1
        if opens and end < 0:
            self.unclosed.add(quote)
            for group in self.stack:  # sorted, it could move this quote before another that would close it
                group.raw = True
        self.stack[-1].pieces.append(quote if end < 0 else self.text[at:end])
        return at + 1 if end < 0 else end


def sort_brace_groups(text: str, keep: int | None = None) -> str:
    """``text`` with each ``{...}`` group's top-level elements sorted: the repr of a set, or of a dict built
    from one, follows the hash seed of the process that made it. Linear: one scan, a string literal skipped at
    once, brackets past _MAX_DEPTH kept as written. A group that would start past the first ``keep`` characters
    of the result is left alone; one still open _SORT_LIMIT characters in keeps its order."""
    if "{" not in text:
        return text
    return _BraceSorter(text, min(len(text), _SORT_LIMIT)).run(len(text) if keep is None else keep)


def normalise(text: str, keep: int | None = None) -> str:
    """Replace what varies between runs of the same failure: addresses, ids, temporary paths, numbers, and
    the order of a set's elements (``keep``: the caller keeps only that many characters)."""
    text = ANSI.sub("", text)
    text = _ADDR.sub("<addr>", text)
    text = _UUID.sub("<uuid>", text)
    text = _TMP.sub("<tmp>", text)
    text = _HEXID.sub("<hex>", text)
    text = _WORKER.sub("gw<N>", text)
    text = _DIMS.sub(lambda m: "x".join("<N>" for _ in m.group().split("x")), text)
    text = _NUMBER.sub("<N>", text)
    return sort_brace_groups(text, keep)


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def signature_from_message(message: str | None, default_type: str = "") -> str | None:
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
    rest = normalise(rest.strip(), _SIGNATURE_BUDGET).strip()
    sig = f"{exc_type}: {rest}" if exc_type and rest else (exc_type or rest)
    if len(sig) > _SIGNATURE_BUDGET:
        sig = sig[: _SIGNATURE_BUDGET - 3] + "..."
    return sig


E_LINE = re.compile(r"^E\s+(\S.*)$", re.MULTILINE)
_XDIST_CRASH = re.compile(r"^\s*worker '?gw\d+'? crashed while running", re.MULTILINE)


def is_worker_crash(text: str | None) -> bool:
    """Whether a message is pytest-xdist's account of a worker that died under a test."""
    return bool(text and _XDIST_CRASH.search(text))


class Message(NamedTuple):
    """What a report says: its crash message, and the raw reason when it is a skip."""

    text: str | None
    skip_reason: str | None = None


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

