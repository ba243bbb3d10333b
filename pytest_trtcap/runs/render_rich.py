"""The terminal table drawn with rich (``pip install 'pytest-trtcap[report]'``), colours on a terminal only.

Cells are rich ``Text`` objects (never markup), already cleaned of control characters; the table's left
edge is padded so no row can start a line with ``RESULT:``.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import IO, Any

from .sections import Section, View

_RIGHT = frozenset({"collected", "passed", "failed", "error", "skipped", "xfailed", "xpassed", "tests", "exit",
                    "collection errors"})
_STYLES = {
    "red": {"failed", "error", "INCOMPLETE", "UNVERIFIED", "regression", "arm-specific failure", "collection error",
            "collection error on some arms"},
    "green": {"passed", "COMPLETE", "fixed"},
    "yellow": {"skipped", "xfailed", "xpassed", "newly skipped", "needs a GPU", "needs a GPU on some arms"},
}
_MORE = "... and {n} more (--max-rows 0 shows all; --format json has everything)"


def _style(cell: str) -> str:
    return next((style for style, words in _STYLES.items() if cell in words), "")


def _columns() -> int | None:
    """The width ``COLUMNS`` gives (the shell's, or the user's), if it is a usable one."""
    import os

    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) >= 20 else None


def _width(view: View, tty: bool) -> Any:
    columns = _columns()
    if columns is not None:  # the width the user's terminal (or the user) asks for, in a pipe too
        return columns
    if tty:
        return None  # rich reads the terminal's own width
    # a log or a pipe with no width asked for: wide enough that node ids are never folded or cut
    widest = [len(x) for x in view.header] + [80]
    for sec in view.sections:
        if sec.rows:
            cells = [
                max([len(col)] + [len(row[i]) for row in sec.rows if i < len(row)])
                for i, col in enumerate(sec.columns)
            ]
            widest.append(sum(n + 3 for n in cells) + 4)
    return min(max(widest + [100]), 1000)


def _table(sec: Section, clean: Callable[[Any], str], unicode_box: bool) -> Any:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    title = f"{sec.title} ({clean(sec.subject)})" if sec.subject else sec.title
    table = Table(title=Text(title, style="bold red" if "INCOMPLETE" in sec.title else "bold"), title_justify="left",
                  box=box.SIMPLE_HEAD if unicode_box else box.ASCII2, show_edge=False, pad_edge=True)
    for col in sec.columns:
        table.add_column(col, overflow="fold", no_wrap=False, justify="right" if col in _RIGHT else "left")
    for row in sec.rows:
        table.add_row(*[Text(clean(cell), style=_style(cell)) for cell in row])
    return table


def _section(console: Any, sec: Section, clean: Callable[[Any], str], unicode_box: bool) -> None:
    from rich.text import Text

    console.print()
    if sec.columns and sec.rows:
        console.print(_table(sec, clean, unicode_box))
    else:
        console.print(Text(sec.title, style="bold"))
    if sec.note:
        console.print(Text(clean(sec.note)))
    if sec.more:
        console.print(Text(_MORE.format(n=sec.more)))
    if sec.code:
        console.print(Text("stderr tail:"))
        for line in sec.code:
            console.print(Text("    " + clean(line)))


def render_rich(view: View, target: IO[str], clean: Callable[[Any], str], unicode_box: bool) -> None:
    from rich.console import Console
    from rich.text import Text

    tty = bool(getattr(target, "isatty", lambda: False)())
    stream: IO[str] = target if tty else io.StringIO()  # logs and pipes get lines without rich's trailing blanks
    console = Console(file=stream, width=_width(view, tty), highlight=False, soft_wrap=True, emoji=False,
                      force_terminal=tty or None, no_color=not tty or None)
    for line in view.header:
        console.print(Text(clean(line)))
    for sec in view.sections:
        _section(console, sec, clean, unicode_box)
    console.print()
    verdict = clean(view.verdict.text)
    console.print(Text(verdict, style="bold green" if view.verdict.result == "COMPLETE" else "bold red"))
    if stream is not target:
        lines: list[str] = [line.rstrip() for line in stream.getvalue().split("\n")]  # type: ignore[attr-defined]
        target.write("\n".join(lines))
