"""Run records: signatures, the recorder stream, JUnit XML, loading with validation, reconciliation, transitions."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from pytest_trtcap import compare, records, report, sweep
from pytest_trtcap.records import RecordError

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, strategies as st  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- signatures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("object at 0x7f3a2c1d90 failed", "object at <addr> failed"),
        ("id 140234 and pid 88", "id <N> and pid <N>"),
        ("bad shape 3x4x5", "bad shape <N>x<N>x<N>"),
        ("took 0.12s, expected 12.", "took <N>s, expected <N>."),
        ("float32 sm_75 x86_64 SM75", "float32 sm_75 x86_64 SM75"),
        ("SM 7.5 and 8.9", "SM <N> and <N>"),
        ("worker 'gw3' died", "worker 'gw<N>' died"),
        ("/tmp/pytest-of-ci/pytest-42/test_tmp0/data/x.bin", "<tmp>/data/x.bin"),
        ("/tmp/pytest-of-ci/pytest-42/popen-gw1/test_tmp0/x", "<tmp>/x"),
        ("open '/tmp/tmpa1b2c3/model.onnx'", "open '<tmp>/model.onnx'"),
        ("run 123e4567-e89b-12d3-a456-426614174000 hash deadbeef1234abcd", "run <uuid> hash <hex>"),
    ],
)
def test_normalise(text, expected):
    assert records.normalise(text) == expected


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80))
def test_normalise_is_idempotent(text):
    once = records.normalise(text)
    assert records.normalise(once) == once


@pytest.mark.parametrize(
    "message, expected",
    [
        ("ZeroDivisionError: division by zero", "ZeroDivisionError: division by zero"),
        ("assert 2 == 1\n +  where 2 = f()", "AssertionError: assert <N> == <N>"),
        ("AssertionError: object at 0xdeadbeef", "AssertionError: object at <addr>"),
        ("mymod.ShapeError: got 3x4", "mymod.ShapeError: got <N>x<N>"),
        ("Skipped: trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)",
         "Skipped: trtcap: needs SM <N> (targets <N> from --trt-target-sm)"),
        ("[XPASS(strict)] flaky kernel", "XPASS(strict): flaky kernel"),
        ("StopIteration", "StopIteration"),
        ("", None),
        (None, None),
    ],
)
def test_signature_from_message(message, expected):
    assert records.signature_from_message(message) == expected


def test_signature_is_capped():
    sig = records.signature_from_message("ValueError: " + "x" * 5000)
    assert len(sig) <= 300 and sig.endswith("...")


def _rep(when, outcome, wasxfail=False, xreason=None, message=None, skip=None):
    return (when, outcome, wasxfail, xreason, message, skip)


@pytest.mark.parametrize(
    "reports, outcome, when",
    [
        ([_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "passed")], "passed", "call"),
        ([_rep("setup", "failed", message="KeyError: 'k'"), _rep("teardown", "passed")], "error", "setup"),
        ([_rep("setup", "passed"), _rep("call", "passed"), _rep("teardown", "failed", message="RuntimeError: x")], "error", "teardown"),
        ([_rep("setup", "passed"), _rep("call", "failed", message="E: a"), _rep("teardown", "failed", message="E: b")], "failed", "call"),
        ([_rep("setup", "skipped", message="Skipped: no", skip="no"), _rep("teardown", "passed")], "skipped", "setup"),
        ([_rep("setup", "passed"), _rep("call", "skipped", True, "known", "ValueError: v"), _rep("teardown", "passed")], "xfailed", "call"),
        ([_rep("setup", "passed"), _rep("call", "passed", True, "maybe"), _rep("teardown", "passed")], "xpassed", "call"),
        ([_rep("???", "failed", message="worker 'gw0' crashed while running 't.py::x'")], "failed", "crash"),
        ([_rep("setup", "passed")], "error", "setup"),
    ],
)
def test_summarise_reports(reports, outcome, when):
    entry = records.summarise_reports(reports)
    assert (entry["outcome"], entry["when"]) == (outcome, when)
    if outcome in ("failed", "error", "skipped"):
        assert entry["signature"]
    if outcome == "passed":
        assert entry["signature"] is None


def test_summarise_reports_keeps_reasons():
    skipped = records.summarise_reports([_rep("setup", "passed"), _rep("call", "skipped", message="Skipped: needs 8.0", skip="needs 8.0")])
    assert skipped["reason"] == "needs 8.0" and skipped["signature"] == "Skipped: needs <N>"
    xfailed = records.summarise_reports([_rep("setup", "passed"), _rep("call", "skipped", True, "known bug", "ValueError: v")])
    assert xfailed["reason"] == "known bug" and xfailed["signature"] == "ValueError: v"
    crashed = records.summarise_reports([_rep("???", "failed", message="worker 'gw1' crashed while running 't.py::x'")])
    assert crashed["signature"].startswith("WorkerCrashed: worker 'gw<N>' crashed")


# --- pytest's summary line ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, counts",
    [
        ("===== 1 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 2 warnings, 3 errors in 0.12s =====",
         {"failed": 1, "passed": 2, "skipped": 1, "xfailed": 1, "xpassed": 1, "warning": 2, "error": 3}),
        ("3 passed, 2 deselected in 1.02s", {"passed": 3, "deselected": 2}),
        ("=== 1 error in 75.12s (0:01:15) ===", {"error": 1}),
        ("\x1b[32m=== \x1b[32m\x1b[1m5 passed\x1b[0m\x1b[32m in 0.01s\x1b[0m\x1b[32m ===\x1b[0m", {"passed": 5}),
        ("============================ no tests ran in 0.01s =============================", {}),
    ],
)
def test_parse_summary_line(line, counts):
    found = records.parse_summary_line("collected 3 items\n\n" + line + "\n")
    assert found is not None and found[1] == counts


def test_parse_summary_line_takes_the_last_and_ignores_noise():
    text = "1 passed in 0.1s\nsome output\n==== 2 failed in 0.3s ====\nINTERNALERROR> nothing\n"
    assert records.parse_summary_line(text)[1] == {"failed": 2}
    assert records.parse_summary_line("test_a.py ..F\n!!! Interrupted\n") is None


def test_expected_summary_counts_reports_not_tests():
    tests = {
        "a": {"outcome": "error", "categories": ["passed", "error"]},  # pass + teardown error
        "b": {"outcome": "xfailed", "categories": ["xfailed"]},
        "c": {"outcome": "failed"},
    }
    counts = records.expected_summary(tests, deselected=4)
    assert counts["passed"] == 1 and counts["error"] == 1 and counts["xfailed"] == 1
    assert counts["failed"] == 1 and counts["deselected"] == 4


# --- JUnit keys -----------------------------------------------------------------------------------------


@given(
    st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=3),
    st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=3),
    st.one_of(st.none(), st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)),
)
def test_junit_key_matches_pytest(dirs, names, params):
    from _pytest.junitxml import bin_xml_escape, mangle_test_address

    nodeid = "/".join(dirs) + ".py::" + "::".join(names) + (f"[{params}]" if params is not None else "")
    mangled = mangle_test_address(nodeid)
    assert records.junit_key(nodeid) == ".".join(mangled[:-1]) + "::" + bin_xml_escape(mangled[-1])


def test_junit_status_maps_xfail_to_skipped():
    assert records.junit_status("xfailed") == "skipped"
    assert records.junit_status("xpassed") == "passed"
    assert records.junit_status("error", ["passed", "error"]) == "error"
    assert records.junit_status("failed", ["failed", "error"]) == "error"


# --- loading and validation ----------------------------------------------------------------------------


def _record(tests, **extra):
    data = {"schema": records.SCHEMA, "version": records.VERSION, "arm": "7.5", "tests": tests}
    data.update(extra)
    return data


def _write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


GOOD_JSON = json.dumps(_record({"t.py::a": {"outcome": "passed"}, "t.py::b": {"outcome": "failed", "signature": "E: x"}}))
GOOD_XML = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1" skipped="1" tests="3">'
    '<testcase classname="t" name="a"/><testcase classname="t" name="b"><failure message="ValueError: 0x1f">tb</failure></testcase>'
    '<testcase classname="t" name="c"><skipped type="pytest.xfail" message="known"/></testcase></testsuite></testsuites>'
)


@pytest.mark.parametrize(
    "name, content, problem",
    [
        ("empty.json", "", "empty file"),
        ("blank.json", "  \n\n", "empty file"),
        ("truncated.json", GOOD_JSON[: len(GOOD_JSON) // 2], "truncated JSON"),
        ("garbage.json", '{"schema": "trtcap-record", "version": 1, "tests": {}} trailing', "invalid JSON"),
        ("foreign.json", '{"name": "package", "dependencies": {}}', "not a trtcap record"),
        ("array.json", "[1, 2, 3]", "not a trtcap record (top level is a JSON array"),
        ("schema.json", json.dumps({"schema": "other", "tests": {}}), "schema is 'other'"),
        ("future.json", json.dumps(_record({}, version=99)), "newer than this trtcap"),
        ("outcome.json", json.dumps(_record({"t.py::a": {"outcome": "exploded"}})), "invalid outcome 'exploded'"),
        ("tests.json", json.dumps(_record([])), "must be an object keyed by node id"),
        ("binary.json", b"\xff\xfe\x00garbage\x80", "not a text file"),
        ("text.txt", "hello world\n", "neither a trtcap record"),
        ("truncated.xml", GOOD_XML[: len(GOOD_XML) // 2], "truncated XML"),
        ("foreign.xml", "<html><body>hi</body></html>", "not a JUnit XML report (root element <html>"),
        ("bad.xml", "<testsuites><testsuite tests='x'></testsuite></testsuites>", "is not a number"),
    ],
)
def test_load_record_rejects_bad_files(tmp_path, name, content, problem):
    path = _write(tmp_path, name, content)
    with pytest.raises(RecordError) as info:
        records.load_record(path)
    message = str(info.value)
    assert message.startswith(str(path) + ": ")
    assert problem in message
    assert "\n" not in message


def test_load_record_missing_and_directory(tmp_path):
    with pytest.raises(RecordError, match="no such file"):
        records.load_record(tmp_path / "nope.json")
    with pytest.raises(RecordError, match="is a directory"):
        records.load_record(tmp_path)


def test_dump_and_load_roundtrip(tmp_path):
    tests = {
        "tests/test_ü.py::test_x[a|b-7.5]": {"outcome": "skipped", "signature": "Skipped: no", "reason": "no"},
        'tests/t.py::test_"quoted"': {"outcome": "xpassed", "signature": None, "reason": "maybe"},
    }
    data = _record(tests, reconciliation={"result": "COMPLETE", "disagreements": [], "sources": {}})
    records.dump_record(data, tmp_path / "r.json")
    loaded = records.load_record(tmp_path / "r.json")
    assert loaded.tests == tests and loaded.result == "COMPLETE" and loaded.arm == "7.5"
    records.dump_record(_record({}), tmp_path / "empty.json")
    assert records.load_record(tmp_path / "empty.json").tests == {}


def test_load_junit_xml(tmp_path):
    rec = records.load_record(_write(tmp_path, "j.xml", GOOD_XML))
    assert rec.source == "junit"
    assert rec.tests["t::a"]["outcome"] == "passed"
    assert rec.tests["t::b"] == {"outcome": "failed", "signature": "ValueError: <addr>", "reason": None}
    assert rec.tests["t::c"]["outcome"] == "xfailed" and rec.tests["t::c"]["reason"] == "known"


# --- the recorder stream ----------------------------------------------------------------------------


def test_read_stream_survives_a_torn_last_line(tmp_path):
    lines = [
        json.dumps({"schema": records.STREAM_SCHEMA, "version": 1, "arm": "7.5"}),
        json.dumps({"e": "collected", "n": 3, "deselected": 1}),
        json.dumps({"e": "start", "id": "t.py::a"}),
        json.dumps({"e": "test", "id": "t.py::a", "outcome": "passed", "signature": None, "when": "call", "categories": ["passed"]}),
        json.dumps({"e": "start", "id": "t.py::b"}),
        '{"e": "test", "id": "t.py::b", "outc',
    ]
    path = _write(tmp_path, "s.jsonl", "\n".join(lines))
    stream = records.read_stream(path)
    assert list(stream["tests"]) == ["t.py::a"]
    assert stream["running"] == ["t.py::b"]
    assert stream["collected"] == 3 and stream["deselected"] == 1
    assert not stream["finished"] and stream["bad_lines"] == 0
    rec = records.load_record(path)  # a bare stream loads too, reconciled with what it has
    assert rec.result == "INCOMPLETE"
    assert any("while running t.py::b" in d for d in rec.disagreements)


def test_read_stream_rejects_foreign_jsonl(tmp_path):
    with pytest.raises(RecordError, match="not a trtcap recorder stream"):
        records.read_stream(_write(tmp_path, "x.jsonl", '{"a": 1}\n{"b": 2}\n'))
    with pytest.raises(RecordError, match="missing"):
        records.read_stream(tmp_path / "none.jsonl")


# --- reconciliation against a real pytest run -----------------------------------------------------------

MIXED_SUITE = textwrap.dedent(
    """
    import pytest

    @pytest.fixture
    def arm(request):
        return request.config.getoption("--trt-target-sm")

    @pytest.fixture
    def bad_teardown():
        yield
        raise RuntimeError("teardown boom")

    @pytest.fixture
    def bad_setup():
        raise KeyError("setup boom")

    def test_pass(): pass
    def test_fail(arm): assert arm == "8.9", f"object at {hex(id(arm))}"
    def test_skip(arm): pytest.skip(f"trtcap: needs SM 8.0 (targets {arm} from --trt-target-sm)")
    @pytest.mark.xfail(reason="known")
    def test_xfail(): raise ValueError("bad shape 3x4")
    @pytest.mark.xfail(reason="maybe")
    def test_xpass(): pass
    @pytest.mark.xfail(reason="strict", strict=True)
    def test_xpass_strict(): pass
    def test_teardown_error(bad_teardown): pass
    def test_fail_and_teardown_error(bad_teardown): assert 0
    def test_setup_error(bad_setup): pass
    @pytest.mark.parametrize("x", [1, 2, 3])
    def test_param(x): assert x != 2
    def test_deselect_me(): pass
    """
)


def _pytest(tmp_path, *args):
    stream, xml = tmp_path / "s.jsonl", tmp_path / "j.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--trt-target-sm", "7.5", "-p", "pytest_trtcap.recorder",
         f"--trtcap-record={stream}", f"--junitxml={xml}", "-p", "no:cacheprovider", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    return proc, stream, xml


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("mixed")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_mixed.py").write_text(MIXED_SUITE)
    (tmp_path / "test_broken.py").write_text("import no_such_module_for_trtcap\n")
    (tmp_path / "test_modskip.py").write_text("import pytest\npytest.skip('whole module', allow_module_level=True)\n")
    proc, stream, xml = _pytest(tmp_path, "-q", "-k", "not deselect_me", "--continue-on-collection-errors")
    return proc, stream, xml


def test_recorder_agrees_with_pytest_on_every_outcome(mixed_run):
    proc, stream_path, xml = mixed_run
    stream = records.read_stream(stream_path)
    tests = stream["tests"]
    expect = {
        "test_mixed.py::test_pass": "passed", "test_mixed.py::test_fail": "failed",
        "test_mixed.py::test_skip": "skipped", "test_mixed.py::test_xfail": "xfailed",
        "test_mixed.py::test_xpass": "xpassed", "test_mixed.py::test_xpass_strict": "failed",
        "test_mixed.py::test_teardown_error": "error", "test_mixed.py::test_fail_and_teardown_error": "failed",
        "test_mixed.py::test_setup_error": "error", "test_mixed.py::test_param[2]": "failed",
        "test_broken.py": "error", "test_modskip.py": "skipped",
    }
    for nodeid, outcome in expect.items():
        assert tests[nodeid]["outcome"] == outcome, nodeid
    assert "test_mixed.py::test_deselect_me" not in tests
    assert tests["test_mixed.py::test_fail"]["signature"] == "AssertionError: object at <addr>"
    assert tests["test_mixed.py::test_skip"]["reason"] == "trtcap: needs SM 8.0 (targets 7.5 from --trt-target-sm)"
    assert tests["test_broken.py"]["signature"].startswith("ModuleNotFoundError: No module named")
    assert tests["test_mixed.py::test_teardown_error"]["categories"] == ["passed", "error"]
    assert stream["finished"] and stream["exitstatus"] == 1 and stream["deselected"] == 1
    rec = records.reconcile(stream, returncode=proc.returncode, stdout=proc.stdout, junit_path=xml)
    assert rec["result"] == "COMPLETE", rec["disagreements"]
    assert rec["sources"]["summary"]["counts"]["deselected"] == 1
    assert rec["sources"]["junit"]["tests"] == len(tests)


def test_reconcile_names_the_source_that_disagrees(mixed_run, tmp_path):
    proc, stream_path, xml = mixed_run
    stream = records.read_stream(stream_path)
    found = records.parse_summary_line(proc.stdout)
    passed = found[1]["passed"]
    lying = proc.stdout.replace(f"{passed} passed", f"{passed + 2} passed")
    rec = records.reconcile(stream, returncode=proc.returncode, stdout=lying, junit_path=xml)
    assert rec["result"] == "INCOMPLETE"
    assert any(d.startswith("summary:") and "by 2 test(s)" in d for d in rec["disagreements"])

    # a JUnit XML that lost one testcase
    text = xml.read_text()
    start = text.index('<testcase classname="test_mixed" name="test_pass"')
    end = text.index("/>", start) + 2
    short = tmp_path / "short.xml"
    short.write_text(text[:start] + text[end:])
    rec = records.reconcile(stream, returncode=proc.returncode, stdout=proc.stdout, junit_path=short)
    assert rec["result"] == "INCOMPLETE"
    assert any(d.startswith("junit:") and "1 test(s) in the record are missing from the XML" in d for d in rec["disagreements"])

    # a record that lost a test against the collected count, and a process killed by a signal
    first = next(k for k, v in stream["tests"].items() if v["when"] != "collect")
    fewer = dict(stream, tests={k: v for k, v in stream["tests"].items() if k != first})
    rec = records.reconcile(fewer, returncode=-9)
    assert any("killed by SIGKILL" in d for d in rec["disagreements"])
    assert any(d.startswith("collected:") and "(1 missing)" in d for d in rec["disagreements"])

    # a truncated XML is a disagreement, not a crash
    trunc = tmp_path / "trunc.xml"
    trunc.write_text(text[: len(text) // 2])
    rec = records.reconcile(stream, returncode=proc.returncode, stdout=proc.stdout, junit_path=trunc)
    assert any("truncated XML" in d for d in rec["disagreements"])


def test_build_record_and_load_it_back(mixed_run, tmp_path):
    proc, stream_path, xml = mixed_run
    data = records.build_record(records.read_stream(stream_path), arm="7.5", returncode=proc.returncode,
                                stdout=proc.stdout, junit_path=xml)
    records.dump_record(data, tmp_path / "arm.json")
    rec = records.load_record(tmp_path / "arm.json")
    assert rec.result == "COMPLETE" and rec.label == "arm 7.5"
    assert rec.counts()["xfailed"] == 1 and rec.counts()["xpassed"] == 1
    junit = records.load_record(xml)  # and the XML compares cleanly against it
    result = compare.compare_records(junit, rec)
    assert result["transitions"] == [], result["transitions"][:3]


# --- transitions ------------------------------------------------------------------------------------------


def E(outcome, signature=None, reason=None):
    return {"outcome": outcome, "signature": signature, "reason": reason}


@pytest.mark.parametrize(
    "before, after, cls",
    [
        (E("passed"), E("failed", "E: x"), "regression"),
        (E("skipped", "S"), E("error", "E: x"), "regression"),
        (None, E("failed", "E: x"), "regression"),
        (E("failed", "E: x"), E("passed"), "fixed"),
        (E("error", "E: x"), E("xfailed", "E: x"), "fixed"),
        (E("failed", "E: x"), E("skipped", "S"), "newly skipped"),
        (E("passed"), E("skipped", "S"), "newly skipped"),
        (E("skipped", "S"), E("passed"), "unskipped"),
        (E("failed", "E: x"), E("error", "E: y"), "changed"),
        (E("passed"), E("xfailed", "E: x"), "changed"),
        (E("failed", "ValueError: a"), E("failed", "TypeError: b"), "signature changed"),
        (E("skipped", "Skipped: a"), E("skipped", "Skipped: b"), "signature changed"),
        (E("failed", "E: <addr>"), E("failed", "E: <addr>"), None),
        (E("xfailed", None), E("xfailed", "E: x"), None),
        (None, E("passed"), "added"),
        (E("failed", "E: x"), None, "removed"),
    ],
)
def test_classify(before, after, cls):
    assert compare.classify(before, after) == cls


def test_transitions_never_drop_a_test_and_order_by_class():
    before = {"a": E("passed"), "b": E("failed", "E: x"), "gone": E("passed"), "same": E("passed")}
    after = {"a": E("failed", "E: y"), "b": E("passed"), "new": E("skipped", "S"), "same": E("passed")}
    items = compare.transitions(before, after)
    assert [(t["nodeid"], t["class"], t["transition"]) for t in items] == [
        ("a", "regression", "passed->failed"),
        ("b", "fixed", "failed->passed"),
        ("new", "added", "absent->skipped"),
        ("gone", "removed", "passed->absent"),
    ]
    assert items[2]["before"] is None and items[3]["after"] is None


def test_compare_records_exit_status_and_incomplete():
    def rec(tests, result="COMPLETE"):
        return records.Record("x.json", _record(tests, reconciliation={"result": result, "disagreements": ["d"] if result != "COMPLETE" else []}))

    same = {"a": E("passed")}
    assert compare.compare_records(rec(same), rec(same))["exit_status"] == 0
    assert compare.compare_records(rec(same), rec({"a": E("failed", "E: x")}))["exit_status"] == 1
    inc = compare.compare_records(rec(same), rec({"a": E("failed", "E: x")}, "INCOMPLETE"))
    assert inc["exit_status"] == 2 and inc["result"] == "INCOMPLETE"


def test_arm_differences_puts_arm_specific_failures_first():
    arms = {
        "7.5": {"s": E("skipped", "Skipped: x", "needs 8.0"), "f": E("failed", "E: x"), "both": E("failed", "E: a"),
                "sig": E("failed", "ValueError: a"), "only75": E("passed")},
        "8.9": {"s": E("passed"), "f": E("passed"), "both": E("failed", "E: a"), "sig": E("failed", "TypeError: b")},
    }
    diffs, skipped = sweep.arm_differences(arms)
    assert [(d["nodeid"], d["class"]) for d in diffs] == [
        ("f", "arm-specific failure"), ("s", "outcome differs"), ("only75", "missing on some arms"),
        ("sig", "signature differs"),
    ]
    assert skipped == [{"nodeid": "s", "outcomes": {"7.5": "skipped", "8.9": "passed"}, "reasons": {"7.5": "needs 8.0"}}]
    # tests an incomplete arm never ran are "not run", not failures of the other arm
    diffs, _ = sweep.arm_differences({"7.5": {"a": E("passed")}, "8.9": {"a": E("passed"), "b": E("failed", "E: x")}}, ["7.5"])
    assert [(d["nodeid"], d["class"], d["outcomes"]["7.5"]) for d in diffs] == [("b", "not run on some arms", "not run")]


# --- rendering ----------------------------------------------------------------------------------------------


def _compare_result():
    before = records.Record("b.json", _record({"t.py::x[a|b]": E("passed"), "t.py::y": E("failed", "E: 1")},
                                                reconciliation={"result": "COMPLETE", "disagreements": []}))
    after = records.Record("a.json", _record({"t.py::x[a|b]": E("failed", "ValueError: bad | pipe"), "t.py::y": E("passed")},
                                               reconciliation={"result": "COMPLETE", "disagreements": []}))
    return compare.compare_records(before, after)


def test_render_markdown_escapes_pipes():
    out = io.StringIO()
    report.render(_compare_result(), "markdown", out)
    text = out.getvalue()
    assert "**RESULT: COMPLETE: 1 regression(s), 1 fixed**" in text
    assert "| `t.py::x[a\\|b]` | regression | passed → failed | `ValueError: bad \\| pipe` |" in text
    for line in text.splitlines():
        if line.startswith("| `"):
            assert line.count(" | ") == 3  # four cells: pipes in cells never add a column


def test_render_plain_text_without_rich(monkeypatch):
    monkeypatch.setenv("TRTCAP_NO_RICH", "1")
    out = io.StringIO()
    report.render(_compare_result(), "table", out)
    text = out.getvalue()
    assert "t.py::x[a|b]  regression  passed → failed  ValueError: bad | pipe" in text
    assert text.rstrip().endswith("RESULT: COMPLETE: 1 regression(s), 1 fixed")


def test_render_rich_keeps_node_ids_whole():
    result = _compare_result()
    long_id = "tests/" + "deep/" * 30 + "test_x.py::TestClass::test_with_a_very_long_name[float16-7.5-batch]"
    result["transitions"][0]["nodeid"] = long_id
    out = io.StringIO()
    report.render(result, "table", out)
    assert long_id in out.getvalue()
    assert "[float16-7.5-batch]" in out.getvalue()  # brackets are not taken for rich markup


def test_render_json_is_the_result():
    out = io.StringIO()
    result = _compare_result()
    report.render(result, "json", out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(result))


# --- light imports and the benchmark -----------------------------------------------------------------------


def test_plugin_side_modules_stay_light():
    code = (
        "import sys, pytest_trtcap, pytest_trtcap.records, pytest_trtcap.recorder, pytest_trtcap.cli; "
        "heavy = [m for m in ('torch', 'rich', 'torch_tensorrt') if m in sys.modules]; "
        "print(','.join(heavy) or 'light')"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "light", proc.stdout + proc.stderr


def test_bench_compare_runs_tiny_sizes():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "bench", "bench_compare.py"), "--sizes", "200,400"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["200", "400"]
    assert all(float(r[-1]) > 0 for r in rows)  # bytes per test measured
