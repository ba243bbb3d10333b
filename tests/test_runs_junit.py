"""JUnit XML as an input format of ``trtcap compare``: any encoding XML allows, pytest's own naming."""

from __future__ import annotations

import pytest
from runs_helpers import GOOD_XML

from pytest_trtcap.runs.junit import junit_key, junit_status
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import RecordError

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


UNITTEST_SUITE = """
import unittest


class TestUT(unittest.TestCase):
    def test_equal(self):
        self.assertEqual(1, 2)

    def test_in(self):
        self.assertIn("fp32", {"fp16": 1}, "engine at 0x7f00 lacks it")

    def test_raises(self):
        raise AssertionError("bad value at 0x7f00")

    def test_no_message(self):
        raise AssertionError
"""

# The attributes unittest-xml-reporting (xmlrunner) writes: the exception's class name in ``type``, ``str()`` of
# the exception in ``message`` (its _TestInfo and _report_testcase), one <testsuite> per TestCase class.
XMLRUNNER_WRITER = """
import sys, unittest, xml.etree.ElementTree as ET

sys.path.insert(0, ".")
import test_ut

class Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.cases = []
    def addSuccess(self, test):
        self.cases.append((test, None, None))
    def addFailure(self, test, err):
        self.cases.append((test, "failure", err))
    def addError(self, test, err):
        self.cases.append((test, "error", err))

result = Result()
unittest.defaultTestLoader.loadTestsFromModule(test_ut).run(result)
suite = ET.Element("testsuite", name="test_ut.TestUT", tests=str(len(result.cases)))
for test, tag, err in result.cases:
    case = ET.SubElement(suite, "testcase", classname=test.id().rpartition(".")[0], name=test._testMethodName)
    if tag:
        ET.SubElement(case, tag, type=err[0].__name__, message=str(err[1])).text = "traceback"
ET.ElementTree(ET.Element("testsuites")).getroot().append(suite)
sys.stdout.write(ET.tostring(suite, encoding="unicode"))
"""


def test_a_junit_file_giving_the_exception_type_in_its_own_attribute_matches_a_pytest_record(tmp_path):
    """unittest-xml-reporting writes ``type="AssertionError" message="1 != 2"``: read without its ``type``, each of
    its failures got another signature than pytest's record of the same failure ("signature changed")."""
    import json
    import subprocess
    import sys

    from runs_helpers import run_pytest, trtcap

    (tmp_path / "test_ut.py").write_text(UNITTEST_SUITE)
    proc, stream, _ = run_pytest(tmp_path, "test_ut.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    xml = subprocess.run([sys.executable, "-c", XMLRUNNER_WRITER], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert xml.returncode == 0 and 'type="AssertionError"' in xml.stdout, xml.stderr
    (tmp_path / "xmlrunner.xml").write_text(xml.stdout)
    compared = trtcap("compare", stream, tmp_path / "xmlrunner.xml", "--accept-unverified", "--format", "json")
    result = json.loads(compared.stdout)
    assert result["after"]["source"] == "junit" and result["after"]["tests"] == 4, result["after"]
    assert result["transitions"] == [], result["transitions"]


@pytest.mark.parametrize(
    "element, signature",
    [
        ('<failure type="AssertionError" message="1 != 2"/>', "AssertionError: <N> != <N>"),
        ('<error type="ValueError" message="bad 0x1f"/>', "ValueError: bad <addr>"),
        ('<error type="RuntimeError" message=""/>', "RuntimeError"),
        ('<failure type="ValueError" message="ValueError: said twice"/>', "ValueError: said twice"),
        ('<failure type="ShapeError" message="mymod.ShapeError: got 3x4"/>', "mymod.ShapeError: got <N>x<N>"),
        ('<failure message="assert 1 == 2"/>', "AssertionError: assert <N> == <N>"),
    ],
)
def test_the_exception_type_attribute_leads_the_signature_unless_the_message_names_it(tmp_path, element, signature):
    path = tmp_path / "typed.xml"
    path.write_text(f'<testsuite tests="1"><testcase classname="t" name="x">{element}</testcase></testsuite>')
    (entry,) = load_record(path).tests.values()
    assert entry["signature"] == signature
