"""Rendering sweep/compare results: table (rich or plain), markdown and JSON; nothing a test prints can forge them."""

from __future__ import annotations

import io
import json

import pytest
from runs_helpers import compare_result_sample, record_data

from pytest_trtcap.runs import render
from pytest_trtcap.runs.compare import compare_records
from pytest_trtcap.runs.record import Record
from pytest_trtcap.runs.sweep import summarise_sweep

FORGED = "x\n\nRESULT: COMPLETE: 2 arm(s), 0 arm-specific failure(s)\n\x1b[2J"
MARKDOWN = (
    "[link](https://evil.example) ![img](https://evil.example/i.png) <img src=x onerror=alert(1)> "
    "` ``code`` | pipe www.evil.example"
)


def E(outcome, signature=None, reason=None):
    return {"outcome": outcome, "signature": signature, "reason": reason}


def test_render_markdown_escapes_pipes():
    out = io.StringIO()
    render.render(compare_result_sample(), "markdown", out)
    text = out.getvalue()
    assert "**RESULT: COMPLETE: 1 regression(s), 1 fixed**" in text
    assert "| `t.py::x[a\\|b]` | regression | passed → failed | `ValueError: bad \\| pipe` |" in text
    for line in text.splitlines():
        if line.startswith("| `"):
            assert line.count(" | ") == 3  # four cells: pipes in cells never add a column


def test_render_plain_text_without_rich(monkeypatch):
    monkeypatch.setenv("TRTCAP_NO_RICH", "1")
    out = io.StringIO()
    render.render(compare_result_sample(), "table", out)
    text = out.getvalue()
    assert "t.py::x[a|b]  regression  passed → failed  ValueError: bad | pipe" in text
    assert text.rstrip().endswith("RESULT: COMPLETE: 1 regression(s), 1 fixed")


def test_render_json_is_the_result():
    out = io.StringIO()
    result = compare_result_sample()
    render.render(result, "json", out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(result))


# --- hostile text (issue 12, item 12) ----------------------------------------------------------------------


def _hostile_sweep():
    """Arm 7.5 fails one test (a real arm-specific failure); every text field carries forged output."""
    def arm(name, outcome):
        tests = {
            "t.py::test_forge[" + FORGED + "]": E(
                outcome, "AssertionError: " + FORGED if outcome == "failed" else None
            ),
            "t.py::test_skip": E("skipped" if name == "7.5" else "passed", "Skipped: " + FORGED, FORGED + MARKDOWN),
            "RESULT: COMPLETE: 2 arm(s), 0 arm-specific failure(s)": E(
                "passed" if name == "7.5" else "failed", "E: " + MARKDOWN
            ),
        }
        return {"arm": name, "tests": tests,
                "collection_errors": {"m\n.py": {"signature": MARKDOWN}} if name == "7.5" else {},
                "pytest": {"exitstatus": 1, "returncode": 1},
                "reconciliation": {"result": "COMPLETE", "disagreements": []}}
    return summarise_sweep([arm("7.5", "failed"), arm("8.9", "passed")], "/tmp/out\nRESULT: COMPLETE", [FORGED])


@pytest.mark.parametrize("rich", [True, False], ids=["rich", "plain"])
def test_table_cannot_be_forged_or_garbled(monkeypatch, rich):
    if not rich:
        monkeypatch.setenv("TRTCAP_NO_RICH", "1")
    out = io.StringIO()
    render.render(_hostile_sweep(), "table", out)
    text = out.getvalue()
    lines = text.rstrip("\n").split("\n")
    assert lines[-1] == "RESULT: COMPLETE: 2 arm(s), 2 arm-specific failure(s), 1 collection error(s) on some arms"
    assert [line for line in lines[:-1] if line.startswith("RESULT")] == []
    assert "\x1b" not in text and "\r" not in text
    assert "\\x1b[2J" in text and "\\n\\nRESULT" in text  # shown, escaped, on the row's own line


def test_markdown_is_inert():
    markdown_it = pytest.importorskip("markdown_it")
    out = io.StringIO()
    render.render(_hostile_sweep(), "markdown", out)
    text = out.getvalue()
    assert "**RESULT: COMPLETE: 2 arm(s), 2 arm-specific failure(s), 1 collection error(s) on some arms**" in text
    assert [
        line for line in text.splitlines() if "RESULT:" in line and not line.startswith("| ") and "`" not in line
    ] == ["**RESULT: COMPLETE: 2 arm(s), 2 arm-specific failure(s), 1 collection error(s) on some arms**"]
    assert "\x1b" not in text
    for preset in ("commonmark", "gfm-like"):
        try:
            html = markdown_it.MarkdownIt(preset, {"html": True}).enable("table").render(text)
        except ModuleNotFoundError:  # gfm-like's autolinks need linkify-it-py
            continue
        assert "<a " not in html and "<img" not in html and "onerror" not in html.replace("onerror=alert", "")
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        assert html.count("<tr>") == len(rows)  # a pipe in a cell never adds a row or a column
        for table in html.split("<table>")[1:]:
            widths = {row.count("<td>") + row.count("<th>") for row in table.split("</table>")[0].split("<tr>")[1:]}
            assert len(widths) == 1, table  # every row as wide as the header


def test_compare_renderings_escape_a_lone_surrogate_and_controls():
    before = Record("b.json", record_data({"t.py::test_\udcff\n": E("passed")}, reconciliation={"result": "COMPLETE"}))
    after = Record(
        "a.json",
        record_data({"t.py::test_\udcff\n": E("failed", "E: \udcff\x07")}, reconciliation={"result": "COMPLETE"}),
    )
    result = compare_records(before, after)
    for fmt in ("table", "markdown", "json"):
        out = io.StringIO()
        render.render(result, fmt, out)
        out.getvalue().encode("utf-8")  # nothing a UTF-8 console cannot print
    out = io.StringIO()
    render.render(result, "markdown", out)
    assert "t.py::test_\\udcff\\n" in out.getvalue() and "E: \\udcff\\x07" in out.getvalue()


def test_clean_escapes_every_control_character():
    assert (
        render.clean("a\nb\rc\td\x00e\x1b[0m\x7f\u2028\u202e\udcff")
        == "a\\nb\\rc\\td\\x00e\\x1b[0m\\x7f\\u2028\\u202e\\udcff"
    )
    assert render.clean("plain → ünïcode 日本") == "plain → ünïcode 日本"


# --- GitHub workflow annotations ----------------------------------------------------------------------------

GITHUB_FORGED = "x%0A\r\n::error::forged\n::warning file=a.py::forged"


def _github(result, max_rows=100):
    out = io.StringIO()
    render.render(result, "github", out, max_rows)
    lines = out.getvalue().rstrip("\n").split("\n")
    return lines, [line for line in lines if line.lstrip().startswith("::")]


def _sweep_with_lines():
    def arm(name, failing):
        tests = {
            "tests/test_gemm.py::test_fp32": {**E("failed" if failing else "passed", "AssertionError: 1 != 2"),
                                              "line": 12},
            "odd,dir:x/test_y.py::test_forge[" + GITHUB_FORGED + "]": E(
                "failed" if failing else "passed", "AssertionError: " + GITHUB_FORGED),
            "tests/test_ok.py::test_same": {**E("passed"), "line": 3},
        }
        return {"arm": name, "tests": tests, "collection_errors": {}, "pytest": {"exitstatus": 1, "returncode": 1},
                "reconciliation": {"result": "COMPLETE", "disagreements": []}}
    return summarise_sweep([arm("7.5", True), arm("8.9", False)], "/tmp/out", [])


def test_github_format_annotates_each_arm_specific_failure_at_its_file_and_line():
    lines, commands = _github(_sweep_with_lines())
    assert len(commands) == 2, commands  # one per arm-specific failure, nothing for the test that never differs
    gemm = next(c for c in commands if "test_gemm" in c)
    assert gemm.startswith("::error file=tests/test_gemm.py,line=12,title="), gemm
    assert "tests/test_gemm.py::test_fp32" in gemm.split("::", 2)[2] and "AssertionError" in gemm
    assert lines[-1] == "RESULT: COMPLETE: 2 arm(s), 2 arm-specific failure(s)"


def test_github_annotations_cannot_be_forged_by_a_node_id_or_message():
    """A test controls its node id and its message: neither may start a workflow command of its own, and a
    property value may not end early at a comma or colon."""
    lines, commands = _github(_sweep_with_lines())
    forged = next(c for c in commands if "test_y.py" in c)
    assert forged.startswith("::error file=odd%2Cdir%3Ax/test_y.py,title="), forged  # no line known: file only
    assert len(commands) == 2 and all(c.startswith("::error file=") for c in commands), commands
    assert "\r" not in "\n".join(lines)
    assert "%250A" in forged.split("::", 2)[2]  # the test's own percent sign is escaped, not read as GitHub's


def test_github_format_of_compare_annotates_regressions_with_the_file_alone_when_no_line_is_known():
    lines, commands = _github(compare_result_sample())
    assert len(commands) == 1, commands  # the regression; the fix is no failure
    assert commands[0].startswith("::error file=t.py,title="), commands
    assert "t.py::x[a|b]" in commands[0] and "line=" not in commands[0]
    assert lines[-1] == "RESULT: COMPLETE: 1 regression(s), 1 fixed"


def test_github_annotations_against_a_junit_file_name_no_file(tmp_path):
    """Against JUnit XML the tests are named ``classname::name``, not by path: a file taken from that name would
    point at no file, so the annotation names none (GitHub shows it on the run)."""
    from runs_helpers import GOOD_XML

    from pytest_trtcap.runs.load import load_record

    (tmp_path / "j.xml").write_text(GOOD_XML)
    tests = {"t.py::b": {**E("passed"), "line": 3}}
    before = Record("b.json", record_data(tests, reconciliation={"result": "COMPLETE"}))
    _, commands = _github(compare_records(before, load_record(tmp_path / "j.xml"), accept_unverified=True))
    assert commands == ["::error title=trtcap compare%3A regression::t::b: passed->failed; ValueError: <addr>"]
