"""The terminal table drawn with rich (``pytest_trtcap.runs.render_rich``): plain lines without colours or trailing
blanks in a log or a pipe, colours on a terminal only, every cell literal text (never markup) passed through the
cleaning function, node ids never folded. Without rich installed, only the first test runs (on the plain table)."""

from __future__ import annotations

import io

import pytest
from runs_helpers import compare_result_sample

from pytest_trtcap.runs import render
from pytest_trtcap.runs.render_rich import render_rich
from pytest_trtcap.runs.sections import Section, Verdict, View


def test_render_rich_keeps_node_ids_whole():
    result = compare_result_sample()
    long_id = "tests/" + "deep/" * 30 + "test_x.py::TestClass::test_with_a_very_long_name[float16-7.5-batch]"
    result["transitions"][0]["nodeid"] = long_id
    out = io.StringIO()
    render.render(result, "table", out)
    assert long_id in out.getvalue()
    assert "[float16-7.5-batch]" in out.getvalue()  # brackets are not taken for rich markup


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def view(*sections: Section, result: str = "COMPLETE") -> View:
    return View("trtcap compare", ["before: b.json", "after:  a.json"], list(sections), Verdict(result, "1 fixed"))


def drawn(v: View, target=None, clean=str, unicode_box=False) -> str:
    pytest.importorskip("rich")
    target = target if target is not None else io.StringIO()
    render_rich(v, target, clean, unicode_box)
    return target.getvalue()


TABLE = Section("Changed tests", ["test", "class", "tests"], [["t.py::a[x]", "regression", "12"]])


def test_a_log_gets_plain_lines_header_first_and_the_verdict_last():
    text = drawn(view(TABLE))
    lines = text.rstrip("\n").split("\n")
    assert lines[:2] == ["before: b.json", "after:  a.json"]
    assert lines[-1] == "RESULT: COMPLETE: 1 fixed"
    assert "\x1b" not in text  # no colour codes in a log or a pipe
    assert all(line == line.rstrip() for line in lines)
    assert "Changed tests" in lines
    row = next(line for line in lines if "t.py::a[x]" in line)
    assert [cell.strip() for cell in row.split("|")] == ["t.py::a[x]", "regression", "12"]
    assert row.endswith(" 12")  # counts are right-aligned


def test_colours_on_a_terminal_only():
    text = drawn(view(TABLE, result="INCOMPLETE"), Terminal())
    assert "\x1b[" in text and "RESULT: INCOMPLETE: 1 fixed" in text


def test_cells_are_text_not_markup_and_go_through_clean():
    row = ["[bold red]t.py::b[/bold red]", "fixed\x1b[2J", "1"]
    text = drawn(view(Section("Changed tests", ["test", "class", "tests"], [row])),
                 clean=lambda value: str(value).replace("\x1b", "<ESC>"))
    assert "[bold red]t.py::b[/bold red]" in text
    assert "fixed<ESC>[2J" in text and "\x1b" not in text


def test_more_rows_note_and_stderr_tail_are_printed():
    section = Section("Arm 7.5 is INCOMPLETE", ["source disagreement"], [["pytest counted 3, the stream 2"]],
                      more=4, note="one note", code=["Fatal Python error: Aborted", "  File x"])
    lines = drawn(view(section)).split("\n")
    assert "... and 4 more (--max-rows 0 shows all; --format json has everything)" in lines
    assert "one note" in lines
    tail = lines.index("stderr tail:")
    assert lines[tail + 1:tail + 3] == ["    Fatal Python error: Aborted", "      File x"]


def test_a_section_without_rows_is_its_title_alone():
    lines = drawn(view(Section("Tests whose outcome differs between arms", note="none: every test has the same"
                                                                                " outcome on every arm"))).split("\n")
    title = lines.index("Tests whose outcome differs between arms")
    assert lines[title + 1] == "none: every test has the same outcome on every arm"


@pytest.mark.parametrize("unicode_box, allowed", [(False, set(map(chr, range(32, 127)))), (True, None)])
def test_ascii_box_when_the_stream_cannot_take_unicode(unicode_box, allowed):
    text = drawn(view(TABLE), unicode_box=unicode_box)
    if allowed is not None:
        assert set(text) - {"\n"} <= allowed
    else:
        assert any(ord(c) > 127 for c in text)  # rich's box drawing characters


WIDE = Section("Tests whose outcome differs between arms", ["test", "class", "7.5", "8.9"],
               [["tests/" + "deep/" * 12 + "test_x.py::TestClass::test_with_a_long_name[float16-7.5]",
                 "arm-specific failure", "failed", "passed"]])


@pytest.mark.parametrize("columns", ["80", "60"])
@pytest.mark.parametrize("target", [io.StringIO, Terminal], ids=["pipe", "terminal"])
def test_the_table_fits_the_width_columns_gives(monkeypatch, columns, target):
    """``COLUMNS`` (set by the shell, or by the user) is the width a table is drawn in, in a pipe and on a
    terminal alike; a node id too long for it folds onto the next line instead of widening the table."""
    monkeypatch.setenv("COLUMNS", columns)
    text = drawn(view(WIDE), target())
    plain = __import__("re").sub(r"\x1b\[[0-9;]*m", "", text)
    assert max(len(line) for line in plain.split("\n")) <= int(columns)
    first_column = "".join(line.split("|")[0].strip() for line in plain.split("\n") if "|" in line)
    assert WIDE.rows[0][0] in first_column  # folded, not cut


def test_without_columns_a_log_keeps_each_node_id_on_one_line(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    text = drawn(view(WIDE))
    assert WIDE.rows[0][0] in text
