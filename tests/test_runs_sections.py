"""What a sweep or compare result shows, as sections of rows (``pytest_trtcap.runs.sections``): the titles and
columns, a row per arm or test, the limits on rows, and the verdict line. The results are built here by hand
(the sweep's and compare's own tests check how they are computed)."""

from __future__ import annotations

from runs_helpers import compare_result_sample

from pytest_trtcap.runs.outcomes import OUTCOMES
from pytest_trtcap.runs.sections import Verdict, compare_view, sweep_view


def arm(name, result="COMPLETE", **extra):
    data = {"arm": name, "result": result, "collected": 3, "counts": {"passed": 2, "failed": 1},
            "collection_errors": {}, "returncode": 1, "duration": 2.34, "needs_gpu": 0, "disagreements": []}
    data.update(extra)
    return data


def sweep(arms, differences=(), skipped=(), **totals):
    counts = {"arm-specific failure": 0, "collection error on some arms": 0, **totals}
    return {"command": "sweep", "result": "COMPLETE" if all(a["result"] == "COMPLETE" for a in arms) else "INCOMPLETE",
            "out_dir": "/tmp/out", "pytest_args": ["-k", "gemm"], "arms": list(arms), "totals": counts,
            "differences": list(differences), "skipped_on_some_arms": list(skipped), "outcomes": list(OUTCOMES)}


def difference(nodeid, cls="arm-specific failure"):
    return {"nodeid": nodeid, "class": cls, "outcomes": {"7.5": "failed", "8.9": "passed"},
            "reasons": {}, "signatures": {"7.5": "E: mismatch", "8.9": None}}


# --- sweep -------------------------------------------------------------------------------------------------------


def test_sweep_header_arms_table_and_verdict():
    view = sweep_view(sweep([arm("7.5"), arm("8.9", collected=None, returncode=None, duration=None)],
                            [difference("t.py::a")], **{"arm-specific failure": 1}), max_rows=10)
    assert view.title == "trtcap sweep"
    assert view.header == ["trtcap sweep: 2 arm(s) (7.5, 8.9); records in /tmp/out", "pytest arguments: -k gemm"]
    arms = view.sections[0]
    assert arms.columns == ["arm", "result", "collected", *OUTCOMES, "collection errors", "exit", "time"]
    assert arms.rows[0] == ["7.5", "COMPLETE", "3", "2", "1", "0", "0", "0", "0", "0", "1", "2.3s"]
    assert arms.rows[1][:3] == ["8.9", "COMPLETE", "?"] and arms.rows[1][-2:] == ["?", ""]
    diffs = view.sections[1]
    assert diffs.title == "Tests whose outcome differs between arms (arm-specific failures first)"
    assert diffs.rows == [["t.py::a", "arm-specific failure", "failed", "passed", "7.5: E: mismatch"]]
    assert view.verdict == Verdict("COMPLETE", "2 arm(s), 1 arm-specific failure(s)")
    assert view.verdict.text == "RESULT: COMPLETE: 2 arm(s), 1 arm-specific failure(s)"


def test_sweep_without_differences_says_why():
    one = sweep_view(sweep([arm("7.5")]), max_rows=10).sections[1]
    two = sweep_view(sweep([arm("7.5"), arm("8.9")]), max_rows=10).sections[1]
    assert (one.rows, one.note) == ([], "one arm only: nothing to compare")
    assert (two.rows, two.note) == ([], "none: every test has the same outcome on every arm")


def test_rows_beyond_max_rows_are_counted_not_shown_and_zero_shows_all():
    diffs = [difference(f"t.py::t{i}") for i in range(5)]
    limited = sweep_view(sweep([arm("7.5"), arm("8.9")], diffs), max_rows=2).sections[1]
    assert [r[0] for r in limited.rows] == ["t.py::t0", "t.py::t1"] and limited.more == 3
    everything = sweep_view(sweep([arm("7.5"), arm("8.9")], diffs), max_rows=0).sections[1]
    assert len(everything.rows) == 5 and everything.more == 0


def test_needs_a_gpu_is_noted_under_the_arms():
    view = sweep_view(sweep([arm("7.5", needs_gpu=2), arm("8.9")]), max_rows=10)
    assert view.sections[0].note == "arm 7.5: needs a GPU: 2 (skipped for want of a CUDA device, counted in skipped)"


def test_skipped_and_collection_error_sections_appear_only_when_there_is_something():
    plain = sweep_view(sweep([arm("7.5"), arm("8.9")]), max_rows=10)
    assert [s.title for s in plain.sections] == ["Arms", "Tests whose outcome differs between arms"]
    skipped = {"nodeid": "t.py::s", "outcomes": {"7.5": "skipped", "8.9": "passed"},
               "reasons": {"7.5": "trtcap: needs SM 8.0"}}
    view = sweep_view(sweep([arm("7.5", collection_errors={"m.py": "ImportError: x"}), arm("8.9")],
                            skipped=[skipped]), max_rows=10)
    assert view.sections[2].rows == [["t.py::s", "7.5", "trtcap: needs SM 8.0", "8.9: passed"]]
    assert view.sections[3].title == "Collection errors (modules pytest could not collect)"
    assert view.sections[3].rows == [["7.5", "m.py", "ImportError: x"]]


def test_an_incomplete_arm_gets_its_own_section_and_decides_the_verdict():
    broken = arm("7.5", "INCOMPLETE", disagreements=["pytest exited with status 2", "stream has 1 test"],
                 stderr_tail=["Fatal Python error"])
    view = sweep_view(sweep([broken, arm("8.9")]), max_rows=10)
    section = view.sections[-1]
    assert section.title == "Arm 7.5 is INCOMPLETE"
    assert section.rows == [["pytest exited with status 2"], ["stream has 1 test"]]
    assert section.code == ["Fatal Python error"]
    assert view.verdict.text == "RESULT: INCOMPLETE: arm 7.5: pytest exited with status 2"


# --- compare -----------------------------------------------------------------------------------------------------


def test_compare_sections_and_verdict():
    view = compare_view(compare_result_sample(), max_rows=10, arrow="->")
    assert view.header == ["before: b.json (arm 7.5, 2 tests, COMPLETE)", "after:  a.json (arm 7.5, 2 tests, COMPLETE)"]
    transitions, changed = view.sections
    assert transitions.rows == [["regression", "1"], ["fixed", "1"], ["unchanged", "0"]]
    assert changed.columns == ["test", "class", "transition", "signature / reason"]
    assert changed.rows == [["t.py::x[a|b]", "regression", "passed -> failed", "ValueError: bad | pipe"],
                            ["t.py::y", "fixed", "failed -> passed", "E: 1"]]
    assert view.verdict.text == "RESULT: COMPLETE: 1 regression(s), 1 fixed"


def test_the_arrow_is_the_callers():
    changed = compare_view(compare_result_sample(), max_rows=10, arrow="→").sections[1]
    assert changed.rows[0][2] == "passed → failed"


def test_compare_limits_rows_per_class():
    result = compare_result_sample()
    result["transitions"] = [dict(result["transitions"][0], nodeid=f"t.py::r{i}") for i in range(3)] + [
        result["transitions"][1]]
    changed = compare_view(result, max_rows=1, arrow="->").sections[1]
    assert [row[0] for row in changed.rows] == ["t.py::r0", "t.py::y"] and changed.more == 2


def test_an_incomplete_side_is_named_with_its_path():
    result = compare_result_sample()
    result["result"] = "INCOMPLETE"
    result["after"] = dict(result["after"], result="INCOMPLETE", disagreements=["pytest counted 3"])
    view = compare_view(result, max_rows=10, arrow="->")
    section = view.sections[-1]
    assert (section.title, section.subject, section.rows) == ("AFTER record is INCOMPLETE", "a.json",
                                                              [["pytest counted 3"]])
    assert view.verdict.text == "RESULT: INCOMPLETE: after (a.json) not reconciled with pytest's accounts"
