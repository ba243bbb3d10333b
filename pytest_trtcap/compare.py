"""Transitions between two records (two arms, or before/after a change).

Every test of either record gets at most one class; tests whose outcome and signature are unchanged get
none. Dicts keyed by node id throughout: linear time and memory in the number of tests.
"""

from __future__ import annotations

import gc
from typing import Any, Dict, List, Mapping, Optional

from .records import COMPLETE, FAILING, INCOMPLETE, OUTCOMES, Record

#: Display order; ``regression`` is what makes ``trtcap compare`` exit 1.
CLASSES = (
    "regression",         # not failing (or absent) -> failed/error
    "fixed",              # failed/error -> passed/xpassed/xfailed
    "newly skipped",      # anything -> skipped (includes fail -> skip)
    "unskipped",          # skipped -> passed/xpassed/xfailed
    "changed",            # any other outcome change (failed <-> error, passed <-> xfailed, ...)
    "signature changed",  # same status, different failure/skip signature
    "added",              # only in AFTER, not failing
    "removed",            # only in BEFORE
)
NOT_FAILING_AFTER_FIX = frozenset({"passed", "xpassed", "xfailed"})


def classify(before: Optional[Mapping[str, Any]], after: Optional[Mapping[str, Any]]) -> Optional[str]:
    """The transition class of one test, or None when nothing changed."""
    b = before["outcome"] if before is not None else None
    a = after["outcome"] if after is not None else None
    if a in FAILING and b not in FAILING:
        return "regression"
    if b is None:
        return "added" if a is not None else None
    if a is None:
        return "removed"
    if a == b:
        bs, as_ = before.get("signature"), after.get("signature")
        if bs is not None and as_ is not None and bs != as_:
            return "signature changed"
        return None
    if b in FAILING and a in NOT_FAILING_AFTER_FIX:
        return "fixed"
    if a == "skipped":
        return "newly skipped"
    if b == "skipped":
        return "unskipped"
    return "changed"


def _side(entry: Optional[Mapping[str, Any]]) -> Optional[Dict[str, Any]]:
    if entry is None:
        return None
    return {"outcome": entry["outcome"], "signature": entry.get("signature"), "reason": entry.get("reason")}


def transitions(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Changed tests, in display order (by class, then by position in BEFORE, then AFTER)."""
    buckets: Dict[str, List[Dict[str, Any]]] = {c: [] for c in CLASSES}
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
    out: List[Dict[str, Any]] = []
    for cls in CLASSES:
        out.extend(buckets[cls])
    return out


def _item(nodeid: str, cls: str, b: Optional[Mapping[str, Any]], a: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    bo = b["outcome"] if b is not None else "absent"
    ao = a["outcome"] if a is not None else "absent"
    return {"nodeid": nodeid, "class": cls, "transition": f"{bo}->{ao}", "before": _side(b), "after": _side(a)}


def describe(record: Record) -> Dict[str, Any]:
    return {
        "path": record.path,
        "label": record.label,
        "arm": record.arm,
        "source": record.source,
        "tests": len(record.tests),
        "counts": record.counts(),
        "result": record.result or "UNVERIFIED",
        "disagreements": record.disagreements,
    }


def compare_records(before: Record, after: Record) -> Dict[str, Any]:
    """The ``trtcap compare`` result: JSON-ready, rendered by :mod:`pytest_trtcap.report`."""
    if before.source == "junit" and after.source != "junit":
        after = after.by_junit_key()
    elif after.source == "junit" and before.source != "junit":
        before = before.by_junit_key()
    gc_enabled = gc.isenabled()
    gc.disable()  # only acyclic dicts are made here; full GC passes over 100k loaded entries would dominate
    try:
        items = transitions(before.tests, after.tests)
    finally:
        if gc_enabled:
            gc.enable()
    totals = dict.fromkeys(CLASSES, 0)
    for item in items:
        totals[item["class"]] += 1
    union = len(before.tests) + sum(1 for nodeid in after.tests if nodeid not in before.tests)
    incomplete = [r for r in (before, after) if r.result == INCOMPLETE]
    result = INCOMPLETE if incomplete else COMPLETE
    exit_status = 2 if incomplete else (1 if totals["regression"] else 0)
    return {
        "command": "compare",
        "result": result,
        "exit_status": exit_status,
        "before": describe(before),
        "after": describe(after),
        "unchanged": union - len(items),
        "totals": totals,
        "transitions": items,
        "outcomes": list(OUTCOMES),
    }
