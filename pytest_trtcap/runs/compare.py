"""Transitions between two records (two arms, or before/after a change).

Every test of either record gets at most one class; tests whose outcome and signature are unchanged get
none. Collection errors are compared too, as entries of their own. Dicts keyed by node id throughout:
linear time and memory in the number of tests.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .junit import STATUS_OUTCOME, junit_key, junit_status
from .outcomes import (
    COLLECTION_ERROR,
    COMPLETE,
    EXIT_FAILURES,
    EXIT_INCOMPLETE,
    EXIT_OK,
    FAILING,
    INCOMPLETE,
    OUTCOMES,
    UNVERIFIED,
    needs_gpu,
)
from .record import Record, gc_paused

#: Display order; ``regression`` and ``collection error`` are what make ``trtcap compare`` exit 1.
CLASSES = (
    "regression",         # not failing -> failed/error
    "collection error",   # a module pytest could not collect after, and could before (or it is new)
    "fixed",              # failed/error/collection error -> passed/xpassed/xfailed (or gone)
    "needs a GPU",        # passed on one side, skipped on the other for want of a CUDA device
    "newly skipped",      # anything -> skipped (includes fail -> skip)
    "unskipped",          # skipped -> passed/xpassed/xfailed
    "changed",            # any other outcome change (failed <-> error, passed <-> xfailed, ...)
    "signature changed",  # same status, different failure/skip signature
    "added",              # only in AFTER
    "removed",            # only in BEFORE
)
FAILING_CLASSES = ("regression", "collection error")
NOT_FAILING_AFTER_FIX = frozenset({"passed", "xpassed", "xfailed"})
_FAILING = FAILING | {COLLECTION_ERROR}


def _changed_class(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    b, a = before["outcome"], after["outcome"]
    if a == COLLECTION_ERROR:
        return "collection error"
    if a in FAILING and b not in _FAILING:
        return "regression"
    if b in _FAILING and (a in NOT_FAILING_AFTER_FIX or b == COLLECTION_ERROR and a not in FAILING):
        return "fixed"
    if {b, a} == {"passed", "skipped"} and (needs_gpu(before) or needs_gpu(after)):
        return "needs a GPU"
    if a == "skipped":
        return "newly skipped"
    if b == "skipped":
        return "unskipped"
    return "changed"


def classify(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str | None:
    """The transition class of one test, or None when nothing changed."""
    if before is None:
        if after is None:
            return None
        return "collection error" if after["outcome"] == COLLECTION_ERROR else "added"
    if after is None:
        return "fixed" if before["outcome"] == COLLECTION_ERROR else "removed"
    if before["outcome"] == after["outcome"]:
        bs, as_ = before.get("signature"), after.get("signature")
        return "signature changed" if bs is not None and as_ is not None and bs != as_ else None
    return _changed_class(before, after)


def _side(entry: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if entry is None:
        return None
    return {"outcome": entry["outcome"], "signature": entry.get("signature"), "reason": entry.get("reason")}


def _item(nodeid: str, cls: str, b: Mapping[str, Any] | None, a: Mapping[str, Any] | None) -> dict[str, Any]:
    bo = b["outcome"] if b is not None else "absent"
    ao = a["outcome"] if a is not None else "absent"
    line = next((e.get("line") for e in (a, b) if e is not None and e.get("line")), None)
    return {"nodeid": nodeid, "class": cls, "transition": f"{bo}->{ao}", "before": _side(b), "after": _side(a),
            "line": line}


def transitions(
    before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Changed tests, in display order (by class, then by position in BEFORE, then AFTER)."""
    buckets: dict[str, list[dict[str, Any]]] = {c: [] for c in CLASSES}
    get_after = after.get
    for nodeid, b in before.items():
        a = get_after(nodeid)
        cls = classify(b, a)
        if cls is not None:
            buckets[cls].append(_item(nodeid, cls, b, a))
    for nodeid, a in after.items():
        if nodeid not in before:
            cls = classify(None, a)
            if cls is not None:
                buckets[cls].append(_item(nodeid, cls, None, a))
    out: list[dict[str, Any]] = []
    for cls in CLASSES:
        out.extend(buckets[cls])
    return out


def comparable_tests(record: Record) -> dict[str, dict[str, Any]]:
    """The record's tests plus its collection errors, as entries of outcome ``collection error``."""
    if not record.collection_errors:
        return record.tests
    tests = dict(record.tests)
    for nodeid, error in record.collection_errors.items():
        tests[nodeid] = {"outcome": COLLECTION_ERROR, "signature": error.get("signature"), "reason": None}
    return tests


def keyed_like_junit(record: Record) -> Record:
    """The same record keyed like a JUnit report (to compare against one)."""
    tests = {}
    for nodeid, entry in comparable_tests(record).items():
        # JUnit XML writes a collection error as an error, a non-strict XPASS as a pass, and a failure
        # plus a teardown error as an error
        outcome = "error" if entry["outcome"] == COLLECTION_ERROR else entry["outcome"]
        seen = outcome if outcome == "xfailed" else STATUS_OUTCOME[junit_status(outcome, entry.get("categories"))]
        if seen != outcome:  # the signature then belongs to another phase: leave it out of comparisons
            entry = dict(entry, outcome=seen, signature=None)
        elif seen != entry["outcome"]:
            entry = dict(entry, outcome=seen)
        tests[junit_key(nodeid)] = entry
    return Record(record.path, dict(record.data, tests=tests, collection_errors={}), record.source)


def describe(record: Record) -> dict[str, Any]:
    return {
        "path": record.path, "label": record.label, "arm": record.arm, "source": record.source,
        "tests": len(record.tests), "counts": record.counts(), "collection_errors": len(record.collection_errors),
        "needs_gpu": record.needs_gpu(), "result": record.result or UNVERIFIED, "disagreements": record.disagreements,
    }


def verdict(sides: list[dict[str, Any]], totals: Mapping[str, int], accept_unverified: bool) -> dict[str, Any]:
    """The result and exit status: INCOMPLETE beats UNVERIFIED beats the transitions."""
    results = {side["result"] for side in sides}
    if INCOMPLETE in results:
        return {"result": INCOMPLETE, "exit_status": EXIT_INCOMPLETE}
    if UNVERIFIED in results and not accept_unverified:
        return {"result": UNVERIFIED, "exit_status": EXIT_INCOMPLETE}
    failing = any(totals[cls] for cls in FAILING_CLASSES)
    return {"result": UNVERIFIED if UNVERIFIED in results else COMPLETE, "accepted_unverified": UNVERIFIED in results,
            "exit_status": EXIT_FAILURES if failing else EXIT_OK}


def compare_records(before: Record, after: Record, accept_unverified: bool = False) -> dict[str, Any]:
    """The ``trtcap compare`` result: JSON-ready, rendered by :mod:`pytest_trtcap.runs.render`."""
    if before.source == "junit" and after.source != "junit":
        after = keyed_like_junit(after)
    elif after.source == "junit" and before.source != "junit":
        before = keyed_like_junit(before)
    with gc_paused():
        before_tests, after_tests = comparable_tests(before), comparable_tests(after)
        items = transitions(before_tests, after_tests)
    totals = dict.fromkeys(CLASSES, 0)
    for item in items:
        totals[item["class"]] += 1
    union = len(before_tests) + sum(1 for nodeid in after_tests if nodeid not in before_tests)
    sides = [describe(before), describe(after)]
    return {"command": "compare", **verdict(sides, totals, accept_unverified), "before": sides[0], "after": sides[1],
            "unchanged": union - len(items), "totals": totals, "transitions": items, "outcomes": list(OUTCOMES)}
