"""``trtcap sweep``: the suite once per arm, then the tests whose outcome differs between arms."""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .arm import Progress, run_arm
from .compare import comparable_tests
from .outcomes import (
    COLLECTION_ERROR,
    COMPLETE,
    EXIT_FAILURES,
    EXIT_INCOMPLETE,
    EXIT_OK,
    FAILING,
    INCOMPLETE,
    OUTCOMES,
    needs_gpu,
    needs_gpu_count,
    outcome_counts,
)
from .record import Record

DEFAULT_ARMS = "7.5,8.9"
DEFAULT_OUT = os.path.join(".trtcap", "sweep")
DIFF_CLASSES = ("arm-specific failure", "collection error on some arms", "needs a GPU on some arms", "outcome differs",
                "missing on some arms", "not run on some arms", "signature differs")
#: The classes that make ``trtcap sweep`` exit 1.
FAILING_CLASSES = ("arm-specific failure", "collection error on some arms")
NOT_RUN = "not run"
_RESERVED = ("--trt-target-sm", "--junitxml", "--junit-xml", "--trtcap-record")
#: Options of pytest's cacheprovider and stepwise plugins: each arm runs with ``-p no:cacheprovider`` (a
#: failure remembered from one arm must never choose the tests another arm runs), so pytest would refuse them.
_NEED_CACHE = ("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--cache-show",
               "--cache-clear", "--lfnf", "--last-failed-no-failures", "--sw", "--stepwise", "--sw-skip",
               "--stepwise-skip", "--sw-reset", "--stepwise-reset")

#: The lock a sweep holds on ``--out`` while it runs. Each arm's files have fixed names there, and an arm
#: removes stale ones before it starts: a second sweep into the same directory would delete the first's stream
#: and the first would read back the second's run as its own. The second is refused at once instead.
LOCK_NAME = ".trtcap-sweep.lock"


@contextlib.contextmanager
def claim_out_dir(out_dir: str) -> Iterator[None]:
    """Create ``out_dir`` and hold its lock until the block ends (the operating system drops it if we die)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): nothing to hold
        fcntl = None  # type: ignore[assignment]
    os.makedirs(out_dir, exist_ok=True)
    fd = os.open(os.path.join(out_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OSError(errno.EBUSY, "another trtcap sweep is writing into it; wait for it to finish "
                              "or choose another --out") from None
            except OSError:  # a filesystem without locks (some network mounts): sweep as before, unguarded
                pass
        yield
    finally:
        os.close(fd)


class UsageError(Exception):
    """Bad command-line input; ``trtcap`` prints it and exits with ``EXIT_INCOMPLETE``."""


def parse_arms(text: str) -> list[str]:
    """``"7.5,8.9"`` -> ``["7.5", "8.9"]`` through ``guards.parse_targets``; UsageError naming a bad value."""
    import trtcap_guards as guards  # light: imports neither torch nor torch_tensorrt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            caps = guards.parse_targets(text, "--arms")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    seen: set = set()
    for item in text.split(","):  # parse_targets drops a repeat; an arm's files in --out hold one run
        cap = guards.parse_targets(item, "--arms", warn=False)[0]
        if cap in seen:
            raise UsageError(f"--arms: {cap[0]}.{cap[1]} is given twice in {text!r} (each arm runs once)")
        seen.add(cap)
    for w in caught:
        print(f"trtcap: warning: {w.message}", file=sys.stderr)
    return [f"{major}.{minor}" for major, minor in caps]


def _option_values(args: Sequence[str], option: str) -> list[str]:
    """The values given to ``option`` as pytest reads them: ``OPTION VALUE``, and ``-pVALUE`` for a short option
    or ``--option=VALUE`` for a long one."""
    joined = option + "=" if option.startswith("--") else option
    return [args[i + 1] if arg == option else arg[len(joined):] for i, arg in enumerate(args)
            if (arg == option and i + 1 < len(args)) or (arg.startswith(joined) and len(arg) > len(joined))]


def check_pytest_args(args: Sequence[str]) -> None:
    for name in _option_values(args, "-p"):
        if name.rsplit(".", 1)[-1] in ("cacheprovider", "stepwise"):
            raise UsageError(f"-p {name} turns pytest's cache back on, which trtcap sweep turns off for each arm "
                             "(one arm's failures must not choose another arm's tests); remove it")
        if name == "no:junitxml":
            raise UsageError("-p no:junitxml turns off pytest's JUnit XML, which trtcap sweep writes for each arm "
                             "(--junitxml into --out); remove it")
    if "each" in _option_values(args, "--dist"):
        raise UsageError("--dist each runs every test once per xdist worker, and an arm's record holds one "
                         "result per test; remove it (--dist load and the other modes run each test once)")
    for arg in args:
        for opt in _RESERVED:
            if arg == opt or arg.startswith(opt + "="):
                raise UsageError(f"{opt} is set by trtcap sweep for each arm; remove it")
        for opt in _NEED_CACHE:
            if arg == opt or arg.startswith(opt + "="):
                raise UsageError(f"{opt} needs pytest's cache, which trtcap sweep turns off for each arm "
                                 "(one arm's failures must not choose another arm's tests); remove it")


def check_addopts(env: Mapping[str, str]) -> None:
    """What :func:`check_pytest_args` refuses after ``--`` is refused in ``PYTEST_ADDOPTS`` too: every arm's pytest
    splits it as a shell would and reads it before its command line. The usage error names it and its value."""
    value = env.get("PYTEST_ADDOPTS")
    if not value:
        return
    where = f"PYTEST_ADDOPTS={value!r}"
    try:
        args = shlex.split(value)
    except ValueError as exc:  # an unbalanced quote: pytest cannot split it either
        raise UsageError(f"{where}: pytest cannot split it ({exc})") from None
    try:
        check_pytest_args(args)
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}") from None


def _diff_class(outcomes: list[str | None], entries: list[Mapping[str, Any] | None]) -> str | None:
    known = [o for o in outcomes if o != NOT_RUN]
    if COLLECTION_ERROR in outcomes and len(set(outcomes)) > 1:
        return "collection error on some arms"
    failing = [o in FAILING for o in known]
    if any(failing) and not all(failing):
        return "arm-specific failure"
    gpu = [needs_gpu(e) for e in entries]
    if any(gpu) and not all(gpu) and all(g or o == "passed" for g, o in zip(gpu, outcomes, strict=True)):
        return "needs a GPU on some arms"
    if None in known:
        return "missing on some arms"
    if NOT_RUN in outcomes:
        return "not run on some arms"
    if len(set(outcomes)) > 1:
        return "outcome differs"
    sigs = {e.get("signature") for e in entries if e is not None and e.get("signature") is not None}
    return "signature differs" if len(sigs) > 1 else None


def _reasons(arms: list[str], entries: list[Mapping[str, Any] | None]) -> dict[str, Any]:
    return {
        a: e.get("reason") for a, e in zip(arms, entries, strict=True) if e is not None and e["outcome"] == "skipped"
    }


def arm_differences(
    arm_tests: Mapping[str, Mapping[str, Mapping[str, Any]]], incomplete: Sequence[str] = ()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tests whose outcome/signature differs across arms, tests skipped on only some arms).

    A test absent from an arm whose run is incomplete counts as "not run" there (unknown), never as an
    arm-specific failure of another arm; absent from a complete arm, it is "absent" (not failing).
    """
    arms, cut_short = list(arm_tests), set(incomplete)
    order: dict[str, None] = {}
    for tests in arm_tests.values():
        order.update(dict.fromkeys(tests))
    buckets: dict[str, list[dict[str, Any]]] = {c: [] for c in DIFF_CLASSES}
    skipped: list[dict[str, Any]] = []
    for nodeid in order:
        entries = [arm_tests[a].get(nodeid) for a in arms]
        outcomes = [
            e["outcome"] if e is not None else (NOT_RUN if a in cut_short else None)
            for a, e in zip(arms, entries, strict=True)
        ]
        cls = _diff_class(outcomes, entries)
        by_arm = dict(zip(arms, outcomes, strict=True))
        if cls is not None:
            buckets[cls].append({
                "nodeid": nodeid, "class": cls, "outcomes": by_arm, "reasons": _reasons(arms, entries),
                "line": next((e.get("line") for e in entries if e is not None and e.get("line")), None),
                "signatures": {
                    a: (e.get("signature") if e is not None else None) for a, e in zip(arms, entries, strict=True)
                },
            })
        if (
            cls != "needs a GPU on some arms"
            and "skipped" in outcomes
            and any(o not in (None, NOT_RUN, "skipped") for o in outcomes)
        ):
            skipped.append({"nodeid": nodeid, "outcomes": by_arm, "reasons": _reasons(arms, entries)})
    return [d for cls in DIFF_CLASSES for d in buckets[cls]], skipped


def _arm_summary(data: Mapping[str, Any]) -> dict[str, Any]:
    rec = data["reconciliation"]
    return {
        "arm": data["arm"], "result": rec["result"], "collected": data.get("collected"), "tests": len(data["tests"]),
        "counts": outcome_counts(data["tests"]), "needs_gpu": needs_gpu_count(data["tests"]),
        "collection_errors": {n: e.get("signature") for n, e in (data.get("collection_errors") or {}).items()},
        "exitstatus": data["pytest"].get("exitstatus"), "returncode": data["pytest"].get("returncode"),
        "duration": data.get("duration"), "record": (data.get("files") or {}).get("record"),
        "disagreements": rec["disagreements"],
        "stderr_tail": data.get("stderr_tail") if rec["result"] != COMPLETE else None,
        "layer_findings": {n: list(e["layer_findings"]) for n, e in data["tests"].items() if e.get("layer_findings")},
        "layers_read": [sum(int((e.get("layers_read") or (0, 0))[i]) for e in data["tests"].values()) for i in (0, 1)],
    }


def summarise_sweep(records: Sequence[Mapping[str, Any]], out_dir: str, pytest_args: Sequence[str]) -> dict[str, Any]:
    arms = [_arm_summary(data) for data in records]
    incomplete = [a["arm"] for a in arms if a["result"] != COMPLETE]
    tests = {d["arm"]: comparable_tests(Record("", dict(d))) for d in records}
    diffs, skipped = arm_differences(tests, incomplete)
    totals = dict.fromkeys(DIFF_CLASSES, 0)
    for item in diffs:
        totals[item["class"]] += 1
    totals["skipped on some arms"] = len(skipped)
    totals["layer findings"] = sum(len(lines) for a in arms for lines in a["layer_findings"].values())
    failing = any(totals[cls] for cls in FAILING_CLASSES)
    return {
        "command": "sweep", "result": INCOMPLETE if incomplete else COMPLETE,
        "exit_status": EXIT_INCOMPLETE if incomplete else (EXIT_FAILURES if failing else EXIT_OK),
        "out_dir": os.path.abspath(out_dir), "pytest_args": list(pytest_args), "arms": arms, "totals": totals,
        "differences": diffs, "skipped_on_some_arms": skipped, "outcomes": list(OUTCOMES),
    }


def run_sweep(
    arms: Sequence[str],
    out_dir: str = DEFAULT_OUT,
    pytest_args: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> dict[str, Any]:
    check_pytest_args(pytest_args)
    check_addopts(os.environ if env is None else env)
    progress = progress or Progress()
    records = []
    with claim_out_dir(out_dir):
        for index, arm in enumerate(arms, 1):
            prefix = f"trtcap: [{index}/{len(arms)}] arm {arm}"
            records.append(run_arm(arm, out_dir, pytest_args, progress=progress, prefix=prefix, env=env, cwd=cwd))
    return summarise_sweep(records, out_dir, pytest_args)
