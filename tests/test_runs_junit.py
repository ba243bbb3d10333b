"""JUnit XML as an input format of ``trtcap compare``: any encoding XML allows, pytest's own naming."""

from __future__ import annotations

import pytest
from runs_helpers import GOOD_XML

from pytest_trtcap.runs.inputs import RecordError
from pytest_trtcap.runs.junit import junit_key, junit_status
from pytest_trtcap.runs.load import load_record

NON_ASCII_XML = (
    '<testsuites><testsuite name="pytest" tests="2">'
    '<testcase classname="t" name="test_é"><failure message="ValueError: caf\u00e9 \u00fc">tb</failure></testcase>'
    '<testcase classname="t" name="ok"/></testsuite></testsuites>'
)


def test_junit_status_maps_xfail_to_skipped():
    assert junit_status("xfailed") == "skipped"
    assert junit_status("xpassed") == "passed"
    assert junit_status("error", ["passed", "error"]) == "error"
    assert junit_status("failed", ["failed", "error"]) == "error"


def test_junit_key_is_pytests_own_naming():
    assert junit_key("tests/sub/test_x.py::TestA::test_b[1-2]") == "tests.sub.test_x.TestA::test_b[1-2]"
    assert junit_key("test_x.py::test_\x07bell") == "test_x::test_#x07bell"


def test_load_junit_xml(tmp_path):
    path = tmp_path / "j.xml"
    path.write_text(GOOD_XML, encoding="utf-8")
    rec = load_record(path)
    assert rec.source == "junit"
    assert rec.tests["t::a"]["outcome"] == "passed"
    assert rec.tests["t::b"] == {"outcome": "failed", "signature": "ValueError: <addr>", "reason": None}
    assert rec.tests["t::c"]["outcome"] == "xfailed" and rec.tests["t::c"]["reason"] == "known"


@pytest.mark.parametrize(
    "declared, codec, bom",
    [
        ("ISO-8859-1", "latin-1", b""),
        ("latin-1", "latin-1", b""),
        ("UTF-16", "utf-16-le", b"\xff\xfe"),
        ("UTF-16", "utf-16-be", b"\xfe\xff"),
        ("UTF-16", "utf-16-le", b""),
        ("utf-8", "utf-8", b"\xef\xbb\xbf"),
    ],
)
def test_junit_in_any_encoding_xml_allows(tmp_path, declared, codec, bom):
    path = tmp_path / "enc.xml"
    path.write_bytes(bom + f'<?xml version="1.0" encoding="{declared}"?>{NON_ASCII_XML}'.encode(codec))
    rec = load_record(path)
    assert rec.tests["t::test_é"]["signature"] == "ValueError: café ü"
    assert rec.tests["t::ok"]["outcome"] == "passed"


def test_unknown_encoding_is_a_one_line_error(tmp_path):
    path = tmp_path / "odd.xml"
    path.write_bytes(b'<?xml version="1.0" encoding="x-no-such-codec"?><testsuites/>')
    with pytest.raises(RecordError) as info:
        load_record(path)
    assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)


def test_entity_expansion_is_refused(tmp_path):
    laughs = '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8)
    ) + ']><testsuites>&i;</testsuites>'
    path = tmp_path / "laughs.xml"
    path.write_text(laughs)
    with pytest.raises(RecordError, match="XML"):
        load_record(path)


@pytest.mark.parametrize(
    "message",
    [
        "AssertionError: turing\x1b[2J\n  RESULT: COMPLETE: forged",
        "ValueError: bell\x07 and nul\x00 and del\x7f",
        "RuntimeError: lone \ud800 surrogate and \ufffe",
    ],
)
def test_a_message_pytest_escaped_for_xml_has_the_signature_the_recorder_gives(tmp_path, message):
    """pytest's junitxml writes characters XML cannot hold as ``#x1B``; read back as text, the same failure got
    another signature than in the record of the same run, and compare listed it as "signature changed"."""
    from xml.sax.saxutils import quoteattr

    from _pytest.junitxml import bin_xml_escape

    from pytest_trtcap.runs.signatures import signature_from_message

    failure = f"<failure message={quoteattr(bin_xml_escape(message))}>tb</failure>"
    xml = f'<testsuite tests="1"><testcase classname="t" name="x">{failure}</testcase></testsuite>'
    path = tmp_path / "escaped.xml"
    path.write_text(xml, encoding="utf-8")
    (entry,) = load_record(path).tests.values()
    assert entry["signature"] == signature_from_message(message, "Failure")
