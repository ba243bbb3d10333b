"""Reading an input file safely (``pytest_trtcap.runs.inputs``): its bytes, or one line naming the file and the
problem: missing, a directory, a device, a pipe or file over the size limit, unreadable."""

from __future__ import annotations

import json
import os
import threading

import pytest
from runs_helpers import assert_rejected, record_data, write_input

from pytest_trtcap.runs import record as inputs
from pytest_trtcap.runs.load import load_record
from pytest_trtcap.runs.record import RecordError, read_bytes


def test_load_record_missing_and_directory(tmp_path):
    with pytest.raises(RecordError, match="no such file"):
        load_record(tmp_path / "nope.json")
    with pytest.raises(RecordError, match="is a directory"):
        load_record(tmp_path)


def test_dev_zero_and_devices():
    assert_rejected("/dev/zero", "is a device, not a file")


def test_oversized_file_is_rejected_without_reading_it_all(tmp_path, monkeypatch):
    from pytest_trtcap.runs import record as inputs

    monkeypatch.setattr(inputs, "MAX_BYTES", 1024)
    big = json.dumps(record_data({f"t.py::t{i}": {"outcome": "passed"} for i in range(100)}))
    assert_rejected(write_input(tmp_path, "big.json", big), "larger than")


def test_the_bytes_come_back_unchanged(tmp_path):
    data = b"\xef\xbb\xbf{\"x\": 1}\r\n\x00\xff"
    assert read_bytes(write_input(tmp_path, "any.bin", data)) == data


def test_the_size_limit_is_inclusive(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_BYTES", 8)
    assert read_bytes(write_input(tmp_path, "eight", b"12345678")) == b"12345678"
    with pytest.raises(RecordError, match=r"nine: larger than"):
        read_bytes(write_input(tmp_path, "nine", b"123456789"))


def _fifo_with(tmp_path, data: bytes):
    path = tmp_path / "fifo"
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as fh:
            try:
                fh.write(data)
            except BrokenPipeError:  # the reader stopped at its limit
                pass

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    return path, writer


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_a_pipe_is_read_up_to_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(inputs, "MAX_BYTES", 3 << 20)
    path, writer = _fifo_with(tmp_path, b"x" * (2 << 20))
    assert read_bytes(path) == b"x" * (2 << 20)
    writer.join(5)
    (tmp_path / "fifo").unlink()
    path, writer = _fifo_with(tmp_path, b"x" * (5 << 20))
    with pytest.raises(RecordError, match=r"fifo: larger than 3 MiB"):
        read_bytes(path)
    writer.join(5)


def test_the_missing_text_is_the_callers(tmp_path):
    with pytest.raises(RecordError) as info:
        read_bytes(tmp_path / "stream.jsonl", missing="no stream written")
    assert (info.value.path, info.value.problem) == (str(tmp_path / "stream.jsonl"), "no stream written")
    assert str(info.value) == f"{tmp_path / 'stream.jsonl'}: no stream written"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_permission_denied(tmp_path):
    path = write_input(tmp_path, "secret.json", json.dumps(record_data({})))
    path.chmod(0)
    try:
        assert_rejected(path, "permission denied")
    finally:
        path.chmod(0o600)


def test_a_file_that_is_not_utf8_is_named_as_not_text(tmp_path):
    """Bytes that are no encoding a record or JUnit file may use: one line, no traceback."""
    assert_rejected(write_input(tmp_path, "latin1.json", '{"arm": "7.5 é"}'.encode("latin-1")), "not a text file")
