"""Progress of a sweep on stderr, and the tails of an arm's output files."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import IO, List, Optional


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

    def update(self, prefix: str, done: int, collected: Optional[int], elapsed: float) -> None:
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
                    self.collected = int(json.loads(line)["n"])
                except (ValueError, KeyError, TypeError):
                    pass


def tail(path: str, lines: int, max_bytes: int = 65536) -> List[str]:
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
