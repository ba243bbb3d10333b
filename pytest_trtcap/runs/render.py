"""Render sweep/compare results: a terminal table (rich when importable, else plain text), markdown, JSON,
GitHub workflow annotations.

Nothing a test prints can forge or garble this output: every piece of run-made text is shown on one line
with control characters escaped (:func:`clean`); table rows are indented so no row can start with
``RESULT:``; markdown shows run-made text only inside code spans, where no link, image or HTML renders;
an annotation carries run-made text only in its message and property values, escaped as GitHub reads them.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import IO, Any

from ..escaping import one_line
from .sections import Annotation, Section, View, compare_view, github_annotations, sweep_view

_MORE = "... and {n} more (--max-rows 0 shows all; --format json has everything)"


def clean(text: Any) -> str:
    """``text`` on one line: control, format and lone-surrogate characters shown as escapes."""
    return one_line(text)


def _arrow(stream: IO[str]) -> str:
    encoding = getattr(stream, "encoding", None)
    if not encoding:  # an in-memory text stream takes any character
        return "→"
    try:
        "→".encode(encoding)
        return "→"
    except (LookupError, UnicodeEncodeError):
        return "->"


def _title(sec: Section) -> str:
    return f"{sec.title} ({clean(sec.subject)})" if sec.subject else sec.title


# --- plain text ----------------------------------------------------------------------------------------


def _plain_table(sec: Section, w: Any) -> None:
    rows = [[clean(c) for c in row] for row in sec.rows]
    widths = [len(c) for c in sec.columns]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = min(max(widths[i], len(cell)), 120)

    def line(row: list[str]) -> str:  # two leading blanks: no row can pass for the verdict line
        return "  " + "  ".join(
            cell.ljust(widths[i]) if i < len(row) - 1 else cell for i, cell in enumerate(row)
        ).rstrip()

    w(line(sec.columns) + "\n")
    w(line(["-" * x for x in widths[:-1]] + ["-" * max(3, len(sec.columns[-1]))]) + "\n")
    for row in rows:
        w(line(row) + "\n")


def _render_plain(view: View, stream: IO[str]) -> None:
    w = stream.write
    for line in view.header:
        w(clean(line) + "\n")
    for sec in view.sections:
        title = _title(sec)
        w("\n" + title + "\n" + "-" * len(title) + "\n")
        if sec.note:
            w(clean(sec.note) + "\n")
        if sec.columns and sec.rows:
            _plain_table(sec, w)
        if sec.more:
            w(_MORE.format(n=sec.more) + "\n")
        if sec.code:
            w("stderr tail:\n")
            for line in sec.code:
                w("    " + clean(line) + "\n")
    w("\n" + clean(view.verdict.text) + "\n")


# --- markdown -----------------------------------------------------------------------------------------

_TRUSTED = re.compile(r"^(?:\d+(?:\.\d+)?s?|\?|[a-z]+(?:[ -][a-z]+)*|COMPLETE|INCOMPLETE|UNVERIFIED)$")
_WORDS = re.compile(r", | → | -> ")


def md_code(text: Any) -> str:
    """``text`` as an inline code span: inert (no link, image or HTML), one line, pipes escaped for tables."""
    text = clean(text).replace("|", "\\|")
    if not text:
        return ""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text[0] == " " or text[-1] == " " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(text: str, vocabulary: bool) -> str:
    """Our own words (outcomes, classes, counts) as they are; anything else as code."""
    if vocabulary and all(_TRUSTED.match(part) for part in _WORDS.split(text)) and "://" not in text:
        return text
    return md_code(text)


def _md_section(sec: Section, w: Any) -> None:
    w(f"\n#### {sec.title}" + (f" {md_code(sec.subject)}" if sec.subject else "") + "\n\n")
    if sec.note:
        w(md_code(sec.note) + "\n")
    if sec.columns and sec.rows:
        w("| " + " | ".join(sec.columns) + " |\n")
        w("|" + "|".join("---" for _ in sec.columns) + "|\n")
        for row in sec.rows:
            w("| " + " | ".join(_md_cell(c, i not in (0, len(row) - 1) or sec.columns[0] in ("class", "arm"))
                                for i, c in enumerate(row)) + " |\n")
    if sec.more:
        w(f"\n_... and {sec.more} more (see `--format json`)_\n")
    if sec.code:
        lines = [clean(line) for line in sec.code]
        fence = "`" * max([3] + [len(run) + 1 for line in lines for run in re.findall("`+", line)])
        w(f"\n<details><summary>stderr tail</summary>\n\n{fence}text\n" + "".join(line + "\n" for line in lines))
        w(f"{fence}\n\n</details>\n")


def _render_markdown(view: View, stream: IO[str]) -> None:
    w = stream.write
    w(f"### {view.title}\n\n")
    for line in view.header:
        w(f"{md_code(line)}  \n")
    v = view.verdict
    fixed = f"RESULT: {v.result}: {v.summary}".rstrip()
    w(f"\n**{fixed}**" + (f" {md_code(v.detail)}" if v.detail else "") + "\n")
    for sec in view.sections:
        _md_section(sec, w)


# --- GitHub workflow annotations -------------------------------------------------------------------------

#: GitHub's escapes for a workflow command: its message, and (more) its property values.
_GH_MESSAGE = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A"})
_GH_PROPERTY = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"})


def github_escape(text: Any, prop: bool = False) -> str:
    """``text`` for a workflow command (a property value when ``prop``): on one line, then GitHub's escapes."""
    return clean(text).translate(_GH_PROPERTY if prop else _GH_MESSAGE)


def _github_command(a: Annotation) -> str:
    props = [f"file={github_escape(a.file, True)}"] if a.file else []
    props += [f"line={a.line}"] if a.line else []
    props.append(f"title={github_escape(a.title, True)}")
    return f"::error {','.join(props)}::{github_escape(a.message)}\n"


def _render_github(result: Mapping[str, Any], view: View, stream: IO[str], max_rows: int) -> None:
    """The header, an ``::error`` annotation per test that makes the command exit 1, the verdict line."""
    w = stream.write
    for line in view.header:
        w(clean(line) + "\n")
    found, more = github_annotations(result, max_rows)
    for a in found:
        w(_github_command(a))
    if more:
        w(f"... and {more} more (--max-rows 0 annotates all; --format json has everything)\n")
    w(clean(view.verdict.text) + "\n")


# --- entry point ---------------------------------------------------------------------------------------


def _rich_available() -> bool:
    if os.environ.get("TRTCAP_NO_RICH"):
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _render_json(result: Mapping[str, Any], stream: IO[str]) -> None:
    text = json.dumps(result, indent=2, ensure_ascii=_arrow(stream) != "→")
    try:
        text.encode(getattr(stream, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):  # lone surrogates from a test's text: escaped, still valid JSON
        text = json.dumps(result, indent=2, ensure_ascii=True)
    stream.write(text + "\n")


def render(
    result: Mapping[str, Any], fmt: str = "table", stream: IO[str] | None = None, max_rows: int = 100
) -> None:
    """Write ``result`` (a sweep or compare result) to ``stream`` in ``fmt``."""
    stream = stream if stream is not None else sys.stdout
    if fmt == "json":
        _render_json(result, stream)
        return
    if result["command"] == "sweep":
        view = sweep_view(result, max_rows)
    else:
        view = compare_view(result, max_rows, _arrow(stream))
    if fmt == "markdown":
        _render_markdown(view, stream)
    elif fmt == "github":
        _render_github(result, view, stream, max_rows)
    elif _rich_available():
        from .render_rich import render_rich

        render_rich(view, stream, clean, _arrow(stream) == "→")
    else:
        _render_plain(view, stream)

