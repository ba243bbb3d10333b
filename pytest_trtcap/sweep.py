"""Run the suite once per arm (``--trt-target-sm``) in a pytest subprocess, record, reconcile, diff.

Per arm, in ``--out``::

    arm-7.5.json          the record (schema in pytest_trtcap.records), reconciled
    arm-7.5.xml           the JUnit XML pytest wrote
    arm-7.5.stream.jsonl  the recorder plugin's incremental stream
    arm-7.5.stdout.txt    pytest's output (the summary line is read from here)
    arm-7.5.stderr.txt
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from typing import Any, Dict, IO, List, Mapping, Optional, Sequence, Tuple

from .records import (
    COMPLETE,
    FAILING,
    INCOMPLETE,
    OUTCOMES,
    RecordError,
    build_record,
    dump_record,
    outcome_counts,
    read_stream,
)

DEFAULT_ARMS = "7.5,8.9"
DEFAULT_OUT = os.path.join(".trtcap", "sweep")
DIFF_CLASSES = ("arm-specific failure", "outcome differs", "missing on some arms", "not run on some arms", "signature differs")
NOT_RUN = "not run"
STDERR_TAIL_LINES = 20
_RESERVED = ("--trt-target-sm", "--junitxml", "--junit-xml", "--trtcap-record")


class UsageError(Exception):
    """Bad command-line input; ``trtcap`` prints it and exits 2."""


def parse_arms(text: str) -> List[str]:
    """``"7.5,8.9"`` -> ``["7.5", "8.9"]`` through ``guards.parse_targets``; UsageError naming a bad value."""
    import trtcap_guards as guards  # light: imports neither torch nor torch_tensorrt

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            caps = guards.parse_targets(text, "--arms")
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    for w in caught:
        print(f"trtcap: warning: {w.message}", file=sys.stderr)
    return [f"{major}.{minor}" for major, minor in caps]


def check_pytest_args(args: Sequence[str]) -> None:
    for arg in args:
        for opt in _RESERVED:
            if arg == opt or arg.startswith(opt + "="):
                raise UsageError(f"{opt} is set by trtcap sweep for each arm; remove it from the pytest arguments")


# --- progress -------------------------------------------------------------------------------------


class Progress:
    """One line per arm on stderr: rewritten in place on a terminal, start/finish lines otherwise."""

    def __init__(self, stream: Optional[IO[str]] = None, enabled: bool = True, heartbeat: float = 30.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.heartbeat = heartbeat
        self._last = 0.0
        self._live = False

    def _emit(self, text: str, final: bool) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
            self._live = not final
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, prefix: str) -> None:
        self._last = time.monotonic()
        self._emit(f"{prefix}: running pytest ...", final=False if self.tty else True)

    def update(self, prefix: str, done: int, collected: Optional[int], elapsed: float) -> None:
        now = time.monotonic()
        if not self.tty and now - self._last < self.heartbeat:
            return
        if self.tty and now - self._last < 0.2:
            return
        self._last = now
        total = f"/{collected}" if collected is not None else ""
        self._emit(f"{prefix}: {done}{total} tests, {elapsed:.0f}s", final=False if self.tty else True)

    def finish(self, text: str) -> None:
        self._emit(text, final=True)


class _StreamWatcher:
    """Counts finished tests in a growing recorder stream (for the progress line)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.rest = b""
        self.done = 0
        self.collected: Optional[int] = None

    def poll(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError:
            return
        self.offset += len(chunk)
        data = self.rest + chunk
        lines = data.split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            if b'"e": "test"' in line:
                self.done += 1
            elif b'"e": "collected"' in line:
                try:
                    import json

                    self.collected = int(json.loads(line)["n"])
                except (ValueError, KeyError, TypeError):
                    pass


def _tail(path: str, lines: int, max_bytes: int = 65536) -> List[str]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - max_bytes))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    out = [line.rstrip() for line in text.splitlines()]
    while out and not out[-1]:
        out.pop()
    return out[-lines:]


def _read_tail_text(path: str, max_bytes: int = 262144) -> str:
    return "\n".join(_tail(path, 10**9, max_bytes))


# --- one arm --------------------------------------------------------------------------------------


def arm_paths(out_dir: str, arm: str) -> Dict[str, str]:
    base = os.path.join(os.path.abspath(out_dir), f"arm-{arm}")
    return {
        "record": base + ".json",
        "junit": base + ".xml",
        "stream": base + ".stream.jsonl",
        "stdout": base + ".stdout.txt",
        "stderr": base + ".stderr.txt",
    }


def pytest_command(arm: str, paths: Mapping[str, str], pytest_args: Sequence[str], python: Optional[str] = None) -> List[str]:
    return [
        python or sys.executable, "-m", "pytest",
        "--trt-target-sm", arm,
        f"--junitxml={paths['junit']}",
        "-p", "no:cacheprovider",
        "-p", "pytest_trtcap.recorder", f"--trtcap-record={paths['stream']}",
        *pytest_args,
    ]


def run_arm(
    arm: str,
    out_dir: str,
    pytest_args: Sequence[str] = (),
    *,
    progress: Optional[Progress] = None,
    prefix: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    poll_interval: float = 0.25,
) -> Dict[str, Any]:
    """Run pytest for one arm; write and return its reconciled record."""
    os.makedirs(out_dir, exist_ok=True)
    paths = arm_paths(out_dir, arm)
    for path in paths.values():  # a stale file from an earlier sweep must never pass for this run's
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    prefix = prefix or f"arm {arm}"
    cmd = pytest_command(arm, paths, pytest_args)
    progress = progress or Progress(enabled=False)
    progress.start(prefix)
    started = time.monotonic()
    watcher = _StreamWatcher(paths["stream"])
    with open(paths["stdout"], "wb") as out, open(paths["stderr"], "wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd,
                                env=dict(env) if env is not None else None)
        try:
            while True:
                try:
                    proc.wait(timeout=poll_interval)
                    break
                except subprocess.TimeoutExpired:
                    watcher.poll()
                    progress.update(prefix, watcher.done, watcher.collected, time.monotonic() - started)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    duration = time.monotonic() - started
    returncode = proc.returncode
    try:
        stream = read_stream(paths["stream"])
    except RecordError as exc:
        stream = {"meta": None, "tests": {}, "collected": None, "deselected": 0, "finished": False,
                  "exitstatus": None, "running": [], "bad_lines": 0, "collected_counts": [],
                  "stream_error": exc.problem}
    stderr_tail = _tail(paths["stderr"], STDERR_TAIL_LINES)
    if not stderr_tail:
        stderr_tail = [f"(stderr is empty; last lines of stdout follow)"] + _tail(paths["stdout"], 8)
    data = build_record(
        stream,
        arm=arm,
        label=f"arm {arm}",
        returncode=returncode,
        stdout=_read_tail_text(paths["stdout"]),
        junit_path=paths["junit"],
        stderr_tail=stderr_tail,
    )
    if stream.get("stream_error"):
        data["reconciliation"]["disagreements"].insert(0, f"record: {paths['stream']}: {stream['stream_error']}")
        data["reconciliation"]["result"] = INCOMPLETE
        data["stderr_tail"] = stderr_tail
    data["pytest"]["command"] = cmd
    data["duration"] = round(duration, 3)
    data["files"] = dict(paths)
    dump_record(data, paths["record"])
    counts = outcome_counts(data["tests"])
    shown = ", ".join(f"{n} {k}{'s' if k == 'error' and n > 1 else ''}" for k, n in counts.items() if n) or "no tests"
    progress.finish(f"{prefix}: {shown} in {duration:.1f}s: {data['reconciliation']['result']}")
    return data


# --- across arms ----------------------------------------------------------------------------------


def arm_differences(
    arm_tests: Mapping[str, Mapping[str, Mapping[str, Any]]], incomplete: Sequence[str] = ()
) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(tests whose outcome/signature differs across arms, tests skipped on only some arms).

    A test absent from an arm whose run is incomplete counts as "not run" there (unknown), never as an
    arm-specific failure of another arm; absent from a complete arm, it is "absent" (not failing).
    """
    arms = list(arm_tests)
    cut_short = set(incomplete)
    order: Dict[str, None] = {}
    for tests in arm_tests.values():
        order.update(dict.fromkeys(tests))
    buckets: Dict[str, List[Dict[str, Any]]] = {c: [] for c in DIFF_CLASSES}
    skipped: List[Dict[str, Any]] = []
    for nodeid in order:
        entries = [arm_tests[a].get(nodeid) for a in arms]
        outcomes = [e["outcome"] if e is not None else (NOT_RUN if a in cut_short else None) for a, e in zip(arms, entries)]
        known = [o for o in outcomes if o != NOT_RUN]
        failing = [o in FAILING for o in known]
        if any(failing) and not all(failing):
            cls: Optional[str] = "arm-specific failure"
        elif None in known:
            cls = "missing on some arms"
        elif NOT_RUN in outcomes:
            cls = "not run on some arms"
        elif len(set(outcomes)) > 1:
            cls = "outcome differs"
        else:
            sigs = {e.get("signature") for e in entries if e is not None and e.get("signature") is not None}
            cls = "signature differs" if len(sigs) > 1 else None
        if cls is not None:
            buckets[cls].append({
                "nodeid": nodeid,
                "class": cls,
                "outcomes": {a: o for a, o in zip(arms, outcomes)},
                "signatures": {a: (e.get("signature") if e is not None else None) for a, e in zip(arms, entries)},
            })
        if "skipped" in outcomes and any(o not in (None, NOT_RUN, "skipped") for o in outcomes):
            skipped.append({
                "nodeid": nodeid,
                "outcomes": {a: o for a, o in zip(arms, outcomes)},
                "reasons": {a: e.get("reason") for a, e in zip(arms, entries) if e is not None and e["outcome"] == "skipped"},
            })
    diffs: List[Dict[str, Any]] = []
    for cls in DIFF_CLASSES:
        diffs.extend(buckets[cls])
    return diffs, skipped


def summarise_sweep(records: Sequence[Mapping[str, Any]], out_dir: str, pytest_args: Sequence[str]) -> Dict[str, Any]:
    arms = []
    for data in records:
        rec = data["reconciliation"]
        arms.append({
            "arm": data["arm"],
            "result": rec["result"],
            "collected": data.get("collected"),
            "tests": len(data["tests"]),
            "counts": outcome_counts(data["tests"]),
            "exitstatus": data["pytest"].get("exitstatus"),
            "returncode": data["pytest"].get("returncode"),
            "duration": data.get("duration"),
            "record": (data.get("files") or {}).get("record"),
            "disagreements": rec["disagreements"],
            "stderr_tail": data.get("stderr_tail") if rec["result"] != COMPLETE else None,
        })
    incomplete = [a["arm"] for a in arms if a["result"] != COMPLETE]
    diffs, skipped = arm_differences({d["arm"]: d["tests"] for d in records}, incomplete)
    totals = dict.fromkeys(DIFF_CLASSES, 0)
    for item in diffs:
        totals[item["class"]] += 1
    totals["skipped on some arms"] = len(skipped)
    result = INCOMPLETE if incomplete else COMPLETE
    exit_status = 2 if incomplete else (1 if totals["arm-specific failure"] else 0)
    return {
        "command": "sweep",
        "result": result,
        "exit_status": exit_status,
        "out_dir": os.path.abspath(out_dir),
        "pytest_args": list(pytest_args),
        "arms": arms,
        "totals": totals,
        "differences": diffs,
        "skipped_on_some_arms": skipped,
        "outcomes": list(OUTCOMES),
    }


def run_sweep(
    arms: Sequence[str],
    out_dir: str = DEFAULT_OUT,
    pytest_args: Sequence[str] = (),
    *,
    progress: Optional[Progress] = None,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
) -> Dict[str, Any]:
    check_pytest_args(pytest_args)
    progress = progress or Progress()
    records = []
    for index, arm in enumerate(arms, 1):
        prefix = f"trtcap: [{index}/{len(arms)}] arm {arm}"
        records.append(run_arm(arm, out_dir, pytest_args, progress=progress, prefix=prefix, env=env, cwd=cwd))
    return summarise_sweep(records, out_dir, pytest_args)
