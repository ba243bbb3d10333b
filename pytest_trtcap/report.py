"""Render sweep/compare results: a terminal table (rich when importable, else plain text), markdown, JSON.

Results are plain JSON-ready dicts (see :func:`pytest_trtcap.sweep.summarise_sweep` and
:func:`pytest_trtcap.compare.compare_records`); ``--format json`` prints them as they are.
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any, Dict, IO, List, Mapping, Optional, Sequence

FORMATS = ("table", "json", "markdown")


class Section:
    __slots__ = ("title", "columns", "rows", "more", "note", "code")

    def __init__(self, title: str, columns: Sequence[str] = (), rows: Optional[List[List[str]]] = None,
                 more: int = 0, note: str = "", code: Optional[List[str]] = None) -> None:
        self.title = title
        self.columns = list(columns)
        self.rows = rows or []
        self.more = more
        self.note = note
        self.code = code


def _arrow(stream: IO[str]) -> str:
    encoding = getattr(stream, "encoding", None)
    if not encoding:  # an in-memory text stream takes any character
        return "→"
    try:
        "→".encode(encoding)
        return "→"
    except (LookupError, UnicodeEncodeError):
        return "->"


def _limit(items: Sequence[Any], max_rows: int) -> tuple:
    if max_rows and len(items) > max_rows:
        return items[:max_rows], len(items) - max_rows
    return items, 0


def _counts_cells(counts: Mapping[str, int], outcomes: Sequence[str]) -> List[str]:
    return [str(counts.get(o, 0)) for o in outcomes]


# --- sections ---------------------------------------------------------------------------------------


def sweep_sections(result: Mapping[str, Any], max_rows: int, arrow: str) -> tuple:
    outcomes = result["outcomes"]
    arms = [a["arm"] for a in result["arms"]]
    header = [f"trtcap sweep: {len(arms)} arm(s) ({', '.join(arms)}); records in {result['out_dir']}"]
    if result["pytest_args"]:
        header.append("pytest arguments: " + " ".join(result["pytest_args"]))
    sections = []
    rows = []
    for a in result["arms"]:
        exit_text = str(a["returncode"]) if a["returncode"] is not None else "?"
        rows.append([a["arm"], a["result"], "?" if a["collected"] is None else str(a["collected"]),
                     *_counts_cells(a["counts"], outcomes), exit_text,
                     f"{a['duration']:.1f}s" if a.get("duration") is not None else ""])
    sections.append(Section("Arms", ["arm", "result", "collected", *outcomes, "exit", "time"], rows))

    diffs = result["differences"]
    shown, more = _limit(diffs, max_rows)
    rows = []
    for d in shown:
        details = []
        for arm in arms:
            sig = d["signatures"].get(arm)
            if sig and (d["outcomes"].get(arm) in ("failed", "error") or d["class"] == "signature differs"):
                details.append(f"{arm}: {sig}")
        rows.append([d["nodeid"], d["class"], *[d["outcomes"].get(arm) or "absent" for arm in arms], "; ".join(details)])
    if diffs:
        sections.append(Section("Tests whose outcome differs between arms (arm-specific failures first)",
                                ["test", "class", *arms, "signature"], rows, more))
    elif len(arms) < 2:
        sections.append(Section("Tests whose outcome differs between arms", note="one arm only: nothing to compare"))
    else:
        sections.append(Section("Tests whose outcome differs between arms", note="none: every test has the same outcome on every arm"))

    skipped = result["skipped_on_some_arms"]
    shown, more = _limit(skipped, max_rows)
    rows = []
    for s in shown:
        on = [arm for arm in arms if s["outcomes"].get(arm) == "skipped"]
        elsewhere = ", ".join(f"{arm}: {s['outcomes'].get(arm) or 'absent'}" for arm in arms if arm not in on)
        reasons = "; ".join(f"{arm}: {s['reasons'].get(arm) or ''}" if len(on) > 1 else (s["reasons"].get(arm) or "") for arm in on)
        rows.append([s["nodeid"], ", ".join(on), reasons, elsewhere])
    if skipped:
        sections.append(Section("Skipped on only some arms", ["test", "skipped on", "reason", "elsewhere"], rows, more))

    for a in result["arms"]:
        if a["result"] != "COMPLETE":
            sections.append(Section(f"Arm {a['arm']} is INCOMPLETE", ["source disagreement"],
                                    [[d] for d in a["disagreements"]],
                                    code=a.get("stderr_tail") or None))
    totals = result["totals"]
    if result["result"] == "COMPLETE":
        verdict = f"RESULT: COMPLETE: {len(arms)} arm(s), {totals['arm-specific failure']} arm-specific failure(s)"
    else:
        bad = [a for a in result["arms"] if a["result"] != "COMPLETE"]
        first = "; ".join(f"arm {a['arm']}: {a['disagreements'][0] if a['disagreements'] else 'unverified'}" for a in bad)
        verdict = f"RESULT: INCOMPLETE: {first}"
    return header, sections, verdict


def compare_sections(result: Mapping[str, Any], max_rows: int, arrow: str) -> tuple:
    b, a = result["before"], result["after"]
    header = [
        f"before: {b['path']} ({b['label']}, {b['tests']} tests, {b['result']})",
        f"after:  {a['path']} ({a['label']}, {a['tests']} tests, {a['result']})",
    ]
    sections = []
    totals = result["totals"]
    rows = [[cls, str(n)] for cls, n in totals.items() if n]
    rows.append(["unchanged", str(result["unchanged"])])
    sections.append(Section("Transitions", ["class", "tests"], rows))
    items = result["transitions"]
    if items:
        rows, more = [], 0
        per_class: Dict[str, int] = {}
        for t in items:
            seen = per_class.get(t["class"], 0)
            per_class[t["class"]] = seen + 1
            if max_rows and seen >= max_rows:
                more += 1
                continue
            bs, as_ = t["before"], t["after"]
            if t["class"] == "signature changed":
                sig = f"{bs['signature']} {arrow} {as_['signature']}"
            else:
                side = as_ if as_ is not None and as_["outcome"] in ("failed", "error", "skipped") else bs
                sig = ""
                if side is not None:
                    sig = (side.get("reason") if side["outcome"] == "skipped" and side.get("reason") else side.get("signature")) or ""
            rows.append([t["nodeid"], t["class"], t["transition"].replace("->", f" {arrow} "), sig])
        sections.append(Section("Changed tests", ["test", "class", "transition", "signature / reason"], rows, more))
    for side, rec in (("before", b), ("after", a)):
        if rec["result"] == "INCOMPLETE":
            sections.append(Section(f"{side.upper()} record is INCOMPLETE ({rec['path']})", ["source disagreement"],
                                    [[d] for d in rec["disagreements"]]))
    if result["result"] == "COMPLETE":
        verdict = f"RESULT: COMPLETE: {totals['regression']} regression(s), {totals['fixed']} fixed"
    else:
        which = [f"{s} ({r['path']})" for s, r in (("before", b), ("after", a)) if r["result"] == "INCOMPLETE"]
        verdict = f"RESULT: INCOMPLETE: {' and '.join(which)} not reconciled with pytest's accounts"
    return header, sections, verdict


# --- renderers ----------------------------------------------------------------------------------------


def _rich_available() -> bool:
    if os.environ.get("TRTCAP_NO_RICH"):
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _render_plain(header: List[str], sections: List[Section], verdict: str, stream: IO[str]) -> None:
    w = stream.write
    for line in header:
        w(line + "\n")
    for sec in sections:
        w("\n" + sec.title + "\n" + "-" * len(sec.title) + "\n")
        if sec.note:
            w(sec.note + "\n")
        if sec.columns and sec.rows:
            widths = [len(c) for c in sec.columns]
            for row in sec.rows:
                for i, cell in enumerate(row[:-1]):
                    widths[i] = min(max(widths[i], len(cell)), 120)
            fmt_row = lambda row: "  ".join(  # noqa: E731
                (cell.ljust(widths[i]) if i < len(row) - 1 else cell) for i, cell in enumerate(row)
            ).rstrip()
            w(fmt_row(sec.columns) + "\n")
            w(fmt_row(["-" * x for x in widths[:-1]] + ["-" * max(3, len(sec.columns[-1]))]) + "\n")
            for row in sec.rows:
                w(fmt_row(row) + "\n")
        if sec.more:
            w(f"... and {sec.more} more (--max-rows 0 shows all; --format json has everything)\n")
        if sec.code:
            w("stderr tail:\n")
            for line in sec.code:
                w("    " + line + "\n")
    w("\n" + verdict + "\n")


def _render_rich(header: List[str], sections: List[Section], verdict: str, stream: IO[str]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    tty = bool(getattr(stream, "isatty", lambda: False)())
    if tty:
        width = None
    else:  # a log or a pipe: wide enough that node ids are never folded or cut
        longest = max([len(x) for x in header] + [sum(len(c) + 3 for c in row) + 4 for s in sections for row in s.rows] + [80])
        width = min(max(longest, 100), 1000)
    target = stream
    table_box = box.SIMPLE_HEAD if _arrow(target) == "→" else box.ASCII2  # box drawing needs a unicode stream
    if not tty:  # rich pads every cell; logs and pipes get the lines without trailing blanks
        stream = io.StringIO()
    console = Console(file=stream, width=width, highlight=False, soft_wrap=False, emoji=False,
                      force_terminal=tty or None, no_color=not tty or None)
    for line in header:
        console.print(Text(line))
    for sec in sections:
        console.print()
        if sec.columns and sec.rows:
            style = "bold red" if "INCOMPLETE" in sec.title else "bold"
            table = Table(title=Text(sec.title, style=style), title_justify="left", box=table_box,
                          show_edge=False, pad_edge=False)
            for i, col in enumerate(sec.columns):
                table.add_column(col, overflow="fold", no_wrap=False,
                                 justify="right" if col.isidentifier() and col in ("collected", "passed", "failed", "error", "skipped", "xfailed", "xpassed", "tests", "exit") else "left")
            for row in sec.rows:
                cells = []
                for cell in row:
                    style = ""
                    if cell in ("failed", "error", "INCOMPLETE", "regression", "arm-specific failure"):
                        style = "red"
                    elif cell in ("passed", "COMPLETE", "fixed"):
                        style = "green"
                    elif cell in ("skipped", "xfailed", "xpassed", "newly skipped"):
                        style = "yellow"
                    cells.append(Text(cell, style=style))
                table.add_row(*cells)
            console.print(table)
        else:
            console.print(Text(sec.title, style="bold"))
        if sec.note:
            console.print(Text(sec.note))
        if sec.more:
            console.print(Text(f"... and {sec.more} more (--max-rows 0 shows all; --format json has everything)"))
        if sec.code:
            console.print(Text("stderr tail:"))
            for line in sec.code:
                console.print(Text("    " + line))
    console.print()
    console.print(Text(verdict, style="bold green" if "RESULT: COMPLETE" in verdict else "bold red"))
    if stream is not target:
        target.write("\n".join(line.rstrip() for line in stream.getvalue().split("\n")))


def _md_cell(text: str) -> str:
    text = str(text).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return text


def _md_code(text: str) -> str:
    text = _md_cell(text)
    if not text:
        return ""
    ticks = "``" if "`" in text else "`"
    pad = " " if ticks == "``" else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _render_markdown(title: str, header: List[str], sections: List[Section], verdict: str, stream: IO[str]) -> None:
    w = stream.write
    w(f"### {title}\n\n")
    for line in header:
        w(f"{_md_cell(line)}  \n")
    w(f"\n**{verdict}**\n")
    for sec in sections:
        w(f"\n#### {_md_cell(sec.title)}\n\n")
        if sec.note:
            w(_md_cell(sec.note) + "\n")
        if sec.columns and sec.rows:
            w("| " + " | ".join(_md_cell(c) for c in sec.columns) + " |\n")
            w("|" + "|".join("---" for _ in sec.columns) + "|\n")
            for row in sec.rows:
                cells = [(_md_code(c) if i == 0 and sec.columns[0] == "test" else _md_cell(c)) for i, c in enumerate(row)]
                if sec.columns[-1] in ("signature", "signature / reason") and cells[-1]:
                    cells[-1] = _md_code(row[-1])
                w("| " + " | ".join(cells) + " |\n")
        if sec.more:
            w(f"\n_... and {sec.more} more (see `--format json`)_\n")
        if sec.code:
            w("\n<details><summary>stderr tail</summary>\n\n```text\n")
            for line in sec.code:
                w(line.replace("```", "'''") + "\n")
            w("```\n\n</details>\n")


def render(result: Mapping[str, Any], fmt: str = "table", stream: Optional[IO[str]] = None, max_rows: int = 100) -> None:
    """Write ``result`` (a sweep or compare result) to ``stream`` in ``fmt``."""
    stream = stream if stream is not None else sys.stdout
    if fmt == "json":
        json.dump(result, stream, indent=2, ensure_ascii=_arrow(stream) != "→")
        stream.write("\n")
        return
    builder = sweep_sections if result["command"] == "sweep" else compare_sections
    arrow = _arrow(stream)
    header, sections, verdict = builder(result, max_rows, arrow)
    if fmt == "markdown":
        _render_markdown(f"trtcap {result['command']}", header, sections, verdict, stream)
    elif _rich_available():
        _render_rich(header, sections, verdict, stream)
    else:
        _render_plain(header, sections, verdict, stream)
