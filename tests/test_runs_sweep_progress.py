"""A sweep's progress on stderr: one line per event in a log, one line rewritten in place on a terminal."""

from __future__ import annotations

import io
import json

from pytest_trtcap.runs.arm import Progress, StreamWatcher, tail


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_gets_start_and_finish_lines():
    out = io.StringIO()
    progress = Progress(out, heartbeat=3600)
    progress.start("arm 7.5")
    progress.update("arm 7.5", 3, 10, 1.0)  # within the heartbeat: nothing
    progress.finish("arm 7.5: 10 passed in 2.0s: COMPLETE")
    assert out.getvalue().splitlines() == ["arm 7.5: running pytest ...", "arm 7.5: 10 passed in 2.0s: COMPLETE"]


def test_terminal_line_is_rewritten_in_place():
    out = Terminal()
    progress = Progress(out)
    progress.start("arm 8.9")
    progress.finish("arm 8.9: done")
    assert out.getvalue() == "\r\x1b[2Karm 8.9: running pytest ...\r\x1b[2Karm 8.9: done\n"


def test_quiet_progress_writes_nothing():
    out = io.StringIO()
    progress = Progress(out, enabled=False)
    progress.start("x")
    progress.finish("y")
    assert out.getvalue() == ""


def test_stream_watcher_counts_finished_tests_as_the_stream_grows(tmp_path):
    path = tmp_path / "s.jsonl"
    watcher = StreamWatcher(str(path))
    watcher.poll()  # no file yet: nothing, no error
    assert (watcher.done, watcher.collected) == (0, None)
    with open(path, "w") as fh:
        fh.write(json.dumps({"e": "collected", "n": 3}) + "\n" + json.dumps({"e": "test", "id": "a"}) + "\n")
        fh.write('{"e": "test", "id": "b"')  # a line still being written
    watcher.poll()
    assert (watcher.done, watcher.collected) == (1, 3)
    with open(path, "a") as fh:
        fh.write("}\n")
    watcher.poll()
    assert watcher.done == 2


def test_tail_keeps_the_last_lines_without_trailing_blanks(tmp_path):
    path = tmp_path / "err.txt"
    path.write_bytes(b"one\ntwo\nthree \xff\n\n\n")
    assert tail(str(path), 2) == ["two", "three \ufffd"]
    assert tail(str(tmp_path / "none.txt"), 2) == []
