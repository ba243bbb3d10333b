"""One test's record entry out of the reports pytest made for it (setup, call, teardown, or a crash)."""

from __future__ import annotations

from typing import Any, Dict, Iterable, NamedTuple, Optional

from .outcomes import FAILING, WHENS
from .signatures import first_line, is_worker_crash, normalise, signature_from_message


class PhaseReport(NamedTuple):
    """What the recorder keeps of one pytest report until the test's last phase arrives."""

    when: str
    outcome: str  # the report's passed / failed / skipped
    wasxfail: bool = False
    xfail_reason: Optional[str] = None
    message: Optional[str] = None
    skip_reason: Optional[str] = None


class Decision(NamedTuple):
    outcome: str
    report: PhaseReport


#: The signature of a test whose reports stopped after setup: the run ended (or lost the report) inside it.
NEVER_CALLED = "Interrupted: the test never reported its call phase"


def _from_call(call: PhaseReport) -> str:
    if call.outcome == "failed":
        return "failed"
    if call.outcome == "skipped":
        return "xfailed" if call.wasxfail else "skipped"
    return "xpassed" if call.wasxfail else "passed"


def decide(by_when: Dict[str, PhaseReport]) -> Decision:
    """The test's outcome and the report that decided it (a failing phase wins over a passing one)."""
    setup, call, teardown = by_when.get("setup"), by_when.get("call"), by_when.get("teardown")
    crash = next((r for w, r in by_when.items() if w not in ("setup", "call", "teardown")), None)
    decided: Optional[Decision] = None
    if setup is not None and setup.outcome == "failed":
        decided = Decision("error", setup)
    elif setup is not None and setup.outcome == "skipped":
        decided = Decision("xfailed" if setup.wasxfail else "skipped", setup)
    elif call is not None:
        decided = Decision(_from_call(call), call)
    if crash is not None and crash.outcome == "failed":
        decided = Decision("failed", crash)
    if teardown is not None and teardown.outcome == "failed" and (decided is None or decided.outcome not in FAILING):
        decided = Decision("error", teardown)
    if decided is None:  # setup passed and nothing else arrived: the run stopped inside the test
        last = setup or teardown
        decided = Decision("error", PhaseReport(last.when if last else "setup", "failed", message=NEVER_CALLED))
    return decided


def summarise_reports(reports: Iterable[PhaseReport]) -> Dict[str, Any]:
    """Fold a test's reports into its record entry: ``outcome``, ``signature``, ``reason`` and ``when``."""
    by_when: Dict[str, PhaseReport] = {}
    for rep in reports:
        earlier = by_when.get(rep.when)
        if earlier is not None and earlier.outcome == "failed" and rep.outcome != "failed":
            continue  # a failed subtest's report, then the test's own passing one: the failure stands
        by_when[rep.when] = rep  # otherwise a later report of a phase replaces the earlier one
    outcome, rep = decide(by_when)
    when = rep.when if rep.when in WHENS else "crash"
    reason: Optional[str] = None
    signature: Optional[str] = None
    if outcome == "xpassed":
        reason = rep.xfail_reason
    elif outcome == "skipped":
        reason, signature = rep.skip_reason, signature_from_message(rep.message, "Skipped")
    elif outcome == "xfailed":
        reason, signature = rep.xfail_reason, signature_from_message(rep.message, "XFAIL")
    elif outcome in FAILING:
        if when == "crash" or is_worker_crash(rep.message):
            when = "crash"
            signature = "WorkerCrashed: " + normalise(first_line(rep.message or "worker crashed"))
        else:
            signature = signature_from_message(rep.message, "Error" if outcome == "error" else "Failure")
    return {"outcome": outcome, "signature": signature, "reason": reason, "when": when}
