"""``pytest_trtcap.report``: the plugin's pairs ride in a report attribute of their own, never in the
project's ``user_properties``; for a test this process ran only the pairs the plugin appended are read back, and a
report that crossed from another process is read for every well-formed pair."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_trtcap.report import ATTRIBUTE, OwnProperties, attach

KEY = "trtcap_leak"


def _item(nodeid: str = "t.py::test_a") -> Any:
    return SimpleNamespace(nodeid=nodeid, user_properties=[], stash=pytest.Stash())


def _report(item: Any, entries: list[Any] | None = None) -> Any:
    report = SimpleNamespace(nodeid=item.nodeid, user_properties=list(item.user_properties))
    if entries is None:
        attach(item, report)
    else:
        setattr(report, ATTRIBUTE, entries)
    return report


def test_a_pair_the_plugin_appended_is_read() -> None:
    own, item = OwnProperties(), _item()
    own.append(item, KEY, "guards: declared targets 8.9")
    assert list(own.read(_report(item), KEY)) == [(KEY, "guards: declared targets 8.9")]


def test_the_project_s_user_properties_are_left_alone() -> None:
    own, item = OwnProperties(), _item()
    own.append(item, KEY, "real")
    report = _report(item)
    assert item.user_properties == [] and report.user_properties == []


def test_a_report_made_before_any_pair_carries_none() -> None:
    own, item = OwnProperties(), _item()
    before = _report(item)
    own.append(item, KEY, "later")
    assert not hasattr(before, ATTRIBUTE) and list(own.read(before, KEY)) == []


def test_an_equal_pair_the_test_wrote_itself_is_not() -> None:
    own, item = OwnProperties(), _item()
    own.ran_here(item.nodeid)
    item.user_properties.append((KEY, "forged"))  # what record_property(KEY, "forged") does
    assert list(own.read(_report(item, [(KEY, "forged")]), KEY)) == []
    assert list(own.read(_report(item), KEY)) == []


def test_entries_of_another_shape_or_key_are_skipped_without_error() -> None:
    own, item = OwnProperties(), _item()
    own.append(item, KEY, "real")
    entries = ["loose", ("a", "b", "c"), ("other", 1), *getattr(_report(item), ATTRIBUTE)]
    assert list(own.read(_report(item, entries), KEY)) == [(KEY, "real")]


def test_a_report_from_another_process_is_read_for_every_well_formed_pair() -> None:
    """An xdist worker's report crosses as a copy: identities are gone, so the key is all there is."""
    own, item = OwnProperties(), _item("t.py::test_elsewhere")
    entries = [(KEY, "from the worker"), ["trtcap_leak", "a list pair"], ("a", "b", "c"), (KEY,)]
    assert list(own.read(_report(item, entries), KEY)) == [(KEY, "from the worker"), (KEY, "a list pair")]
