"""One arm of a sweep: pytest in a subprocess at ``--trt-target-sm ARM``, recorded and reconciled.

Per arm, in ``--out``::

    arm-7.5.json          the record (schema in pytest_trtcap.runs.record), reconciled
    arm-7.5.xml           the JUnit XML pytest wrote (for CI, and for ``trtcap compare``)
    arm-7.5.stream.jsonl  the recorder plugin's incremental stream
    arm-7.5.stdout.txt    pytest's output
    arm-7.5.stderr.txt
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence

from .outcomes import INCOMPLETE, outcome_counts
from .progress import Progress, StreamWatcher, tail
from .reconcile import reconcile
from .record import RecordError, build_record, dump_record
from .stream import empty_stream, read_stream

STDERR_TAIL_LINES = 20
_PYTEST_USAGE_ERROR = 4


class ArmPaths(NamedTuple):
    record: str
    junit: str
    stream: str
    stdout: str
    stderr: str


class Launch(NamedTuple):
    """How an arm's pytest process went."""

    returncode: int
    duration: float


def arm_paths(out_dir: str, arm: str) -> ArmPaths:
    base = os.path.join(os.path.abspath(out_dir), f"arm-{arm}")
    return ArmPaths(base + ".json", base + ".xml", base + ".stream.jsonl", base + ".stdout.txt", base + ".stderr.txt")


def pytest_command(arm: str, paths: ArmPaths, pytest_args: Sequence[str]) -> List[str]:
    """The arm's pytest, loading the plugin whose option it passes (where pytest loads no plugin by itself,
    ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``; beside the entry point the plugin registers once) and the recorder."""
    return [
        sys.executable, "-m", "pytest", "-p", "pytest_trtcap.plugin", "--trt-target-sm", arm,
        f"--junitxml={paths.junit}", "-p", "no:cacheprovider", "-p", "pytest_trtcap.runs.recorder",
        f"--trtcap-record={paths.stream}",
        *pytest_args,
    ]


def _launch(cmd: List[str], paths: ArmPaths, progress: Progress, prefix: str,
            env: Optional[Mapping[str, str]], cwd: Optional[str], poll_interval: float) -> Launch:
    started = time.monotonic()
    watcher = StreamWatcher(paths.stream)
    progress.start(prefix)
    with open(paths.stdout, "wb") as out, open(paths.stderr, "wb") as err:
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
    return Launch(proc.returncode, time.monotonic() - started)


def _stderr_tail(paths: ArmPaths) -> List[str]:
    lines = tail(paths.stderr, STDERR_TAIL_LINES)
    return lines or ["(stderr is empty; last lines of stdout follow)"] + tail(paths.stdout, 8)


def _record(arm: str, paths: ArmPaths, launch: Launch) -> Dict[str, Any]:
    try:
        stream = read_stream(paths.stream)
    except RecordError as exc:
        stream = empty_stream(exc.problem)
    reconciliation = reconcile(stream, returncode=launch.returncode)
    if stream.get("stream_error"):
        # pytest refusing its arguments is the cause, the missing stream its consequence: the cause leads.
        disagreements = reconciliation["disagreements"]
        at = len(disagreements) if launch.returncode == _PYTEST_USAGE_ERROR else 0
        disagreements.insert(at, f"record: {paths.stream}: {stream['stream_error']}")
        reconciliation["result"] = INCOMPLETE
    return build_record(stream, reconciliation, arm=arm, returncode=launch.returncode, stderr_tail=_stderr_tail(paths))


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
    for path in paths:  # a stale file from an earlier sweep must never pass for this run's
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    prefix = prefix or f"arm {arm}"
    progress = progress or Progress(enabled=False)
    cmd = pytest_command(arm, paths, pytest_args)
    launch = _launch(cmd, paths, progress, prefix, env, cwd, poll_interval)
    data = _record(arm, paths, launch)
    data["pytest"]["command"] = cmd
    data["duration"] = round(launch.duration, 3)
    data["files"] = paths._asdict()
    dump_record(data, paths.record)
    counts = outcome_counts(data["tests"])
    shown = ", ".join(f"{n} {k}{'s' if k == 'error' and n > 1 else ''}" for k, n in counts.items() if n) or "no tests"
    progress.finish(f"{prefix}: {shown} in {launch.duration:.1f}s: {data['reconciliation']['result']}")
    return data
