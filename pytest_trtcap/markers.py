"""Capability markers: their help and the rules behind each, generated from the guards' rules table, and the skip
decision they share; a marker given arguments fails its collector's report.

Loaded once a session uses the plugin (or ``pytest --markers`` shows them): their names, which is all a dormant
session reads, are declared in ``options``. The predicate loads only when a marker is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from trtcap_guards import markers as rule_markers
from trtcap_guards.tooling import format_capability

from .options import MARKER_NAMES, NO_ISOLATION

if TYPE_CHECKING:
    from trtcap_guards import Rule

SKIP_PREFIX = "trtcap: "
_OURS = frozenset(MARKER_NAMES)


def capability_markers() -> dict[str, tuple[Rule, ...]]:
    """Marker name -> rules, in table order (``trt_fp32_gemm``, ``trt_cdist_matmul``, ...)."""
    return rule_markers()


def marker_lines() -> list[str]:
    """ini ``markers`` lines: name, signature and help, generated from the table."""
    lines = []
    for name, group in capability_markers().items():
        caps = ", ".join(sorted({f"SM {format_capability(r.capability)}" for r in group}))
        what = group[0].cannot_serve
        ops = sorted({t for r in group for t in r.targets})
        lines.append(
            f"{name}: skip when TensorRT-RTX cannot serve {what} on the declared targets ({caps}; "
            f"ops: {', '.join(ops)}). Takes no arguments."
        )
    lines.append(f"{NO_ISOLATION}: do not hold and restore Torch-TensorRT's global registries around this test.")
    return lines


def skip_reason(marker: str, decision: Any) -> str | None:
    """The skip reason if ``marker`` forbids this test under ``decision``, else None."""
    for rule in capability_markers().get(marker, ()):
        if decision.targets_capability(rule.capability):
            from .escaping import one_line  # the origin is the project's text (declare_targets(origin=...))

            return one_line(
                f"{SKIP_PREFIX}TensorRT-RTX cannot serve {rule.cannot_serve} on SM "
                f"{format_capability(rule.capability)} ({decision.describe()})"
            )
    return None


def argument_problem(item: Any, mark: Any) -> str | None:
    """What is wrong with ``mark``, one of our markers on ``item``, if it was given arguments (they take none)."""
    if not (mark.args or mark.kwargs):
        return None
    from .hook_results import shown  # the arguments are the project's objects: any repr, of any length

    given = ", ".join([shown(a, 100) for a in mark.args] + [f"{k}={shown(v, 100)}" for k, v in mark.kwargs.items()])
    return f"{item.nodeid}: @pytest.mark.{mark.name} takes no arguments, got ({given})"


def our_marks(item: Any) -> list[Any]:
    """Our markers on ``item`` and its parents, closest first: its node chain read once (pytest's
    ``get_closest_marker`` reads it again for each name, and a test is asked for each of ours)."""
    ours = frozenset(MARKER_NAMES)
    return [mark for mark in item.iter_markers() if mark.name in ours]


def bad_marker_usage(item: Any, marks: list[Any] | None = None) -> list[str]:
    """Problems with our markers on ``item`` (they take no arguments); ``marks``: ``our_marks(item)`` if read."""
    found = (argument_problem(item, mark) for mark in (our_marks(item) if marks is None else marks))
    return [problem for problem in found if problem is not None]


def check_collect_report(report: Any) -> None:
    """Capability markers given arguments fail the collection of the module (or class) they are used in, naming
    the test and the arguments."""
    items = [item for item in report.result if isinstance(item, pytest.Item)]
    problems = [p for item in items for p in bad_marker_usage(item)]
    if problems:
        report.outcome = "failed"
        report.longrepr = "trtcap: " + "\n".join(problems)
        report.result = []


def warn_misspelt(unknown: dict[str, Any]) -> None:
    """For each marker pytest does not know (name -> the first test carrying it) that is close to one of ours
    (``trt_fp32_gem``): a ``PytestUnknownMarkWarning`` at that test naming the marker meant. The test runs where
    ours would skip it; pytest's own warning cannot say which one was meant."""
    import difflib
    import warnings

    for name, item in unknown.items():
        near = difflib.get_close_matches(name, MARKER_NAMES, n=1, cutoff=0.8)
        if near:
            _, line, _ = item.location
            warnings.warn_explicit(pytest.PytestUnknownMarkWarning(
                f"trtcap: {item.nodeid} is marked {name}, which is no marker: did you mean {near[0]}? It runs where "
                f"{near[0]} would skip it; add --strict-markers to addopts to make an unknown marker an error"),
                pytest.PytestUnknownMarkWarning, str(item.path), (line or 0) + 1)
