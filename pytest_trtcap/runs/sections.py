"""What a sweep or compare result shows, as sections of rows: the renderers only lay them out.

Text that comes from a test run (node ids, reasons, signatures, paths) stays in cells, subjects and
code lines, never in a title or the verdict's fixed words, so every renderer can escape exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .compare import FAILING_CLASSES as COMPARE_FAILING
from .outcomes import COMPLETE, INCOMPLETE
from .sweep import FAILING_CLASSES as SWEEP_FAILING


@dataclass
class Section:
    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    more: int = 0
    note: str = ""
    code: list[str] | None = None
    subject: str = ""  # run-made text shown after the title (a path)


class Verdict(NamedTuple):
    """The last line: ``RESULT: <result>: <summary>``; ``detail`` holds any run-made text."""

    result: str
    summary: str
    detail: str = ""

    @property
    def text(self) -> str:
        return f"RESULT: {self.result}: {self.summary}{self.detail}"


class View(NamedTuple):
    title: str
    header: list[str]
    sections: list[Section]
    verdict: Verdict


class Annotation(NamedTuple):
    """One new failure as a CI annotation: where (``file`` None when the names are JUnit's, not paths) and what."""

    file: str | None
    line: int | None
    title: str  # our own words
    message: str  # run-made text


def _annotation(nodeid: str, line: Any, title: str, message: str, paths: bool = True) -> Annotation:
    file = nodeid.split("::", 1)[0] if paths else ""
    return Annotation(file or None, line if type(line) is int and line >= 1 and file else None, title, message)


def github_annotations(result: Mapping[str, Any], max_rows: int) -> tuple[list[Annotation], int]:
    """(an annotation per test that makes the command exit 1, how many more than ``max_rows`` were left out)."""
    if result["command"] == "sweep":
        arms = [a["arm"] for a in result["arms"]]
        items = [d for d in result["differences"] if d["class"] in SWEEP_FAILING]
        shown, more = _limit(items, max_rows)
        return [_annotation(
            d["nodeid"], d.get("line"), f"trtcap sweep: {d['class']}",
            f"{d['nodeid']}: " + ", ".join(f"{arm} {d['outcomes'].get(arm) or 'absent'}" for arm in arms)
            + (f"; {_diff_details(d, arms)}" if _diff_details(d, arms) else ""),
        ) for d in shown], more
    paths = "junit" not in (result["before"].get("source"), result["after"].get("source"))
    items = [t for t in result["transitions"] if t["class"] in COMPARE_FAILING]
    shown, more = _limit(items, max_rows)
    return [_annotation(
        t["nodeid"], t.get("line"), f"trtcap compare: {t['class']}",
        f"{t['nodeid']}: {t['transition']}" + (f"; {_transition_cell(t, '->')}" if _transition_cell(t, "->") else ""),
        paths,
    ) for t in shown], more


def _limit(items: Sequence[Any], max_rows: int) -> tuple:
    if max_rows and len(items) > max_rows:
        return items[:max_rows], len(items) - max_rows
    return items, 0


# --- sweep -----------------------------------------------------------------------------------------


def _arms_section(result: Mapping[str, Any]) -> Section:
    outcomes, rows = result["outcomes"], []
    for a in result["arms"]:
        rows.append([a["arm"], a["result"], "?" if a["collected"] is None else str(a["collected"]),
                     *[str(a["counts"].get(o, 0)) for o in outcomes], str(len(a["collection_errors"])),
                     str(a["returncode"]) if a["returncode"] is not None else "?",
                     f"{a['duration']:.1f}s" if a.get("duration") is not None else ""])
    gpu = [f"arm {a['arm']}: needs a GPU: {a['needs_gpu']}" for a in result["arms"] if a["needs_gpu"]]
    note = "; ".join(gpu) + " (skipped for want of a CUDA device, counted in skipped)" if gpu else ""
    return Section(
        "Arms", ["arm", "result", "collected", *outcomes, "collection errors", "exit", "time"], rows, note=note
    )


def _diff_details(d: Mapping[str, Any], arms: list[str]) -> str:
    details = []
    for arm in arms:
        sig, reason = d["signatures"].get(arm), d["reasons"].get(arm)
        if d["class"] == "needs a GPU on some arms" and reason:
            details.append(f"{arm}: {reason}")
        elif sig and (
            d["outcomes"].get(arm) in ("failed", "error", "collection error") or d["class"] == "signature differs"
        ):
            details.append(f"{arm}: {sig}")
    return "; ".join(details)


def _diff_section(result: Mapping[str, Any], arms: list[str], max_rows: int) -> Section:
    title = "Tests whose outcome differs between arms"
    diffs = result["differences"]
    if not diffs:
        note = (
            "one arm only: nothing to compare" if len(arms) < 2
            else "none: every test has the same outcome on every arm"
        )
        return Section(title, note=note)
    shown, more = _limit(diffs, max_rows)
    rows = [[d["nodeid"], d["class"], *[d["outcomes"].get(arm) or "absent" for arm in arms], _diff_details(d, arms)]
            for d in shown]
    return Section(title + " (arm-specific failures first)", ["test", "class", *arms, "signature"], rows, more)


def _skipped_section(result: Mapping[str, Any], arms: list[str], max_rows: int) -> Section | None:
    skipped = result["skipped_on_some_arms"]
    if not skipped:
        return None
    shown, more = _limit(skipped, max_rows)
    rows = []
    for s in shown:
        on = [arm for arm in arms if s["outcomes"].get(arm) == "skipped"]
        elsewhere = ", ".join(f"{arm}: {s['outcomes'].get(arm) or 'absent'}" for arm in arms if arm not in on)
        reasons = "; ".join(
            f"{arm}: {s['reasons'].get(arm) or ''}" if len(on) > 1 else (s["reasons"].get(arm) or "") for arm in on
        )
        rows.append([s["nodeid"], ", ".join(on), reasons, elsewhere])
    return Section("Skipped on only some arms", ["test", "skipped on", "reason", "elsewhere"], rows, more)


def _collection_section(result: Mapping[str, Any], max_rows: int) -> Section | None:
    rows = [[a["arm"], nodeid, sig or ""] for a in result["arms"] for nodeid, sig in a["collection_errors"].items()]
    if not rows:
        return None
    shown, more = _limit(rows, max_rows)
    return Section(
        "Collection errors (modules pytest could not collect)", ["arm", "module", "signature"], list(shown), more
    )


def _layer_section(result: Mapping[str, Any], max_rows: int) -> Section | None:
    """What ``--trtcap-audit-layers`` found, per arm and test (arms run without it have nothing here)."""
    rows = [[a["arm"], nodeid, line] for a in result["arms"] for nodeid, lines in a.get("layer_findings", {}).items()
            for line in lines]
    if not rows and not any(any(a.get("layers_read") or ()) for a in result["arms"]):
        return None
    shown, more = _limit(rows, max_rows)
    counts = "; ".join(f"arm {a['arm']}: {(a.get('layers_read') or [0, 0])[0]} network(s), "
                       f"{(a.get('layers_read') or [0, 0])[1]} engine(s) read, "
                       f"{sum(len(v) for v in a.get('layer_findings', {}).values())} finding(s) in "
                       f"{len(a.get('layer_findings', {}))} test(s)" for a in result["arms"])
    return Section("Layer audit findings (layers the declared targets cannot serve)", ["arm", "test", "finding"],
                   list(shown), more, note=counts)


def _sweep_verdict(result: Mapping[str, Any]) -> Verdict:
    arms, totals = result["arms"], result["totals"]
    if result["result"] == COMPLETE:
        return Verdict(COMPLETE, f"{len(arms)} arm(s), {totals['arm-specific failure']} arm-specific failure(s)"
                       + (f", {totals['collection error on some arms']} collection error(s) on some arms"
                          if totals["collection error on some arms"] else "")
                       + (f", {totals['layer findings']} layer finding(s)" if totals.get("layer findings") else ""))
    bad = [a for a in arms if a["result"] != COMPLETE]
    first = "; ".join(f"arm {a['arm']}: {a['disagreements'][0] if a['disagreements'] else 'unverified'}" for a in bad)
    return Verdict(INCOMPLETE, "", first)


def sweep_view(result: Mapping[str, Any], max_rows: int) -> View:
    arms = [a["arm"] for a in result["arms"]]
    header = [f"trtcap sweep: {len(arms)} arm(s) ({', '.join(arms)}); records in {result['out_dir']}"]
    if result["pytest_args"]:
        header.append("pytest arguments: " + " ".join(result["pytest_args"]))
    sections = [_arms_section(result), _diff_section(result, arms, max_rows)]
    sections += [s for s in (_skipped_section(result, arms, max_rows), _collection_section(result, max_rows),
                             _layer_section(result, max_rows)) if s]
    for a in result["arms"]:
        if a["result"] != COMPLETE:
            sections.append(Section(f"Arm {a['arm']} is INCOMPLETE", ["source disagreement"],
                                    [[d] for d in a["disagreements"]], code=a.get("stderr_tail") or None))
    return View("trtcap sweep", header, sections, _sweep_verdict(result))


# --- compare ---------------------------------------------------------------------------------------


def _transition_cell(t: Mapping[str, Any], arrow: str) -> str:
    bs, as_ = t["before"], t["after"]
    if t["class"] == "signature changed":
        return f"{bs['signature']} {arrow} {as_['signature']}"
    side = as_ if as_ is not None and as_["outcome"] in ("failed", "error", "skipped", "collection error") else bs
    if side is None:
        return ""
    if side["outcome"] == "skipped" and side.get("reason"):
        return side["reason"]
    return side.get("signature") or ""


def _changed_section(items: list[dict[str, Any]], max_rows: int, arrow: str) -> Section:
    rows, more = [], 0
    per_class: dict[str, int] = {}
    for t in items:
        seen = per_class.get(t["class"], 0)
        per_class[t["class"]] = seen + 1
        if max_rows and seen >= max_rows:
            more += 1
            continue
        rows.append([t["nodeid"], t["class"], t["transition"].replace("->", f" {arrow} "), _transition_cell(t, arrow)])
    return Section("Changed tests", ["test", "class", "transition", "signature / reason"], rows, more)


def _compare_verdict(result: Mapping[str, Any]) -> Verdict:
    b, a, totals = result["before"], result["after"], result["totals"]
    counts = f"{totals['regression']} regression(s), {totals['fixed']} fixed"
    if totals["collection error"]:
        counts += f", {totals['collection error']} new collection error(s)"
    if result["result"] == INCOMPLETE:
        which = " and ".join(
            f"{s} ({r['path']})" for s, r in (("before", b), ("after", a)) if r["result"] == INCOMPLETE
        )
        return Verdict(INCOMPLETE, "", f"{which} not reconciled with pytest's accounts")
    if result["result"] == COMPLETE:
        return Verdict(COMPLETE, counts)
    which = " and ".join(f"{s} ({r['path']})" for s, r in (("before", b), ("after", a)) if r["result"] != COMPLETE)
    if result.get("accepted_unverified"):
        return Verdict("UNVERIFIED", f"{counts} (accepted with --accept-unverified; unverified: ", f"{which})")
    return Verdict(
        "UNVERIFIED", "nothing proves these sides lost no test (use --accept-unverified to compare anyway): ", which
    )


def compare_view(result: Mapping[str, Any], max_rows: int, arrow: str) -> View:
    b, a = result["before"], result["after"]
    header = [
        f"{side + ':':7} {r['path']} ({r['label']}, {r['tests']} tests, {r['result']})"
        for side, r in (("before", b), ("after", a))
    ]
    rows = [[cls, str(n)] for cls, n in result["totals"].items() if n]
    rows.append(["unchanged", str(result["unchanged"])])
    sections = [Section("Transitions", ["class", "tests"], rows)]
    if result["transitions"]:
        sections.append(_changed_section(result["transitions"], max_rows, arrow))
    for side, rec in (("before", b), ("after", a)):
        if rec["result"] == INCOMPLETE:
            sections.append(Section(f"{side.upper()} record is INCOMPLETE", ["source disagreement"],
                                    [[d] for d in rec["disagreements"]], subject=rec["path"]))
    return View("trtcap compare", header, sections, _compare_verdict(result))
