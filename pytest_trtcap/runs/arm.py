"""One arm of a sweep: pytest in a subprocess at ``--trt-target-sm ARM``, recorded and reconciled, with its
progress line on stderr.

Per arm, in ``--out``::

    arm-7.5.json          the record (schema in pytest_trtcap.runs.record), reconciled
    arm-7.5.xml           the JUnit XML pytest wrote (for CI, and for ``trtcap compare``)
    arm-7.5.stream.jsonl  the recorder plugin's incremental stream
    arm-7.5.stdout.txt    pytest's output
    arm-7.5.stderr.txt
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any, NamedTuple

from .outcomes import INCOMPLETE, outcome_counts
from .reconcile import PYTEST_USAGE_ERROR, reconcile
from .record import RecordError, build_record, dump_record
from .stream import empty_stream, read_stream

STDERR_TAIL_LINES = 20


# --- progress on stderr, and the tails of an arm's output files ----------------------------------------------


class Progress:
    """One line per arm on stderr: rewritten in place on a terminal, start/finish lines otherwise."""

    def __init__(self, stream: IO[str] | None = None, enabled: bool = True, heartbeat: float = 30.0) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.heartbeat = heartbeat
        self._last = 0.0
        self._live = False

    def _emit(self, text: str, final: bool) -> None:
        if not self.enabled:
            return
        try:
            if self.tty:
                self.stream.write("\r\x1b[2K" + text + ("\n" if final else ""))
                self._live = not final
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
        except OSError:  # stderr that cannot take a line (a full disk, a closed pipe) must not stop the sweep
            self.enabled = False

    def start(self, prefix: str) -> None:
        self._last = time.monotonic()
        self._emit(f"{prefix}: running pytest ...", final=not self.tty)

    def update(self, prefix: str, done: int, collected: int | None, elapsed: float) -> None:
        now = time.monotonic()
        if not self.tty and now - self._last < self.heartbeat:
            return
        if self.tty and now - self._last < 0.2:
            return
        self._last = now
        total = f"/{collected}" if collected is not None else ""
        self._emit(f"{prefix}: {done}{total} tests, {elapsed:.0f}s", final=not self.tty)

    def finish(self, text: str) -> None:
        self._emit(text, final=True)


class StreamWatcher:
    """Counts finished tests in a growing recorder stream (for the progress line)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0
        self.rest = b""
        self.done = 0
        self.collected: int | None = None

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
                    self.collected = int(json.loads(line)["n"])
                except (ValueError, KeyError, TypeError):
                    pass


def tail(path: str, lines: int, max_bytes: int = 65536) -> list[str]:
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


# --- the arm's pytest ----------------------------------------------------------------------------------------


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


def pytest_command(arm: str, paths: ArmPaths, pytest_args: Sequence[str]) -> list[str]:
    """The arm's pytest, loading the plugin whose option it passes (where pytest loads no plugin by itself,
    ``PYTEST_DISABLE_PLUGIN_AUTOLOAD``; beside the entry point the plugin registers once) and the recorder."""
    return [
        sys.executable, "-m", "pytest", "-p", "pytest_trtcap.plugin", "--trt-target-sm", arm,
        f"--junitxml={paths.junit}", "-p", "no:cacheprovider", "-p", "pytest_trtcap.runs.recorder",
        f"--trtcap-record={paths.stream}",
        *pytest_args,
    ]


def _launch(cmd: list[str], paths: ArmPaths, progress: Progress, prefix: str,
            env: Mapping[str, str] | None, cwd: str | None, poll_interval: float) -> Launch:
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


def _stderr_tail(paths: ArmPaths) -> list[str]:
    lines = tail(paths.stderr, STDERR_TAIL_LINES)
    return lines or ["(stderr is empty; last lines of stdout follow)"] + tail(paths.stdout, 8)


def _record(arm: str, paths: ArmPaths, launch: Launch) -> dict[str, Any]:
    try:
        stream = read_stream(paths.stream)
    except RecordError as exc:
        stream = empty_stream(exc.problem)
    reconciliation = reconcile(stream, returncode=launch.returncode)
    if stream.get("stream_error"):
        # pytest refusing its arguments is the cause, the missing stream its consequence: the cause leads.
        disagreements = reconciliation["disagreements"]
        at = len(disagreements) if launch.returncode == PYTEST_USAGE_ERROR else 0
        disagreements.insert(at, f"record: {paths.stream}: {stream['stream_error']}")
        reconciliation["result"] = INCOMPLETE
    return build_record(stream, reconciliation, arm=arm, returncode=launch.returncode, stderr_tail=_stderr_tail(paths))


def run_arm(
    arm: str,
    out_dir: str,
    pytest_args: Sequence[str] = (),
    *,
    progress: Progress | None = None,
    prefix: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    poll_interval: float = 0.25,
) -> dict[str, Any]:
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
