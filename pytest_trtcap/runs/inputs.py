"""Reading an input file safely: one-line errors naming the file, bounded size, no devices.

``trtcap compare`` takes any path a user (or a CI artefact) hands it; whatever that file is, the answer is
either its bytes or a :class:`RecordError` that the command prints as one line and exits 2 on.
"""

from __future__ import annotations

import os
import stat
from typing import Any

#: Larger than any real record (100,000 tests make about 20 MB); /dev/zero or a runaway file stops here.
MAX_BYTES = 512 * 1024 * 1024


class RecordError(Exception):
    """A file that cannot be used as a record. ``str()`` is one line naming the file and the problem."""

    def __init__(self, path: Any, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def _read_pipe(fh: Any, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of a pipe, in chunks (``read(limit)`` would allocate the limit up front)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(path: Any, missing: str = "no such file") -> bytes:
    """The file's bytes (at most ``MAX_BYTES``); a RecordError naming the file and what is wrong otherwise."""
    limit = MAX_BYTES
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
                raise RecordError(path, "is a device, not a file")
            regular = stat.S_ISREG(info.st_mode)
            if regular and info.st_size > limit:
                raise RecordError(path, f"larger than {limit // (1024 * 1024)} MiB: not a record trtcap can use")
            data = fh.read() if regular else _read_pipe(fh, limit)
    except FileNotFoundError:
        raise RecordError(path, missing) from None
    except IsADirectoryError:
        raise RecordError(path, "is a directory, not a file") from None
    except PermissionError:
        raise RecordError(path, "permission denied") from None
    except OSError as exc:
        raise RecordError(path, f"cannot read: {exc.strerror or exc}") from None
    except MemoryError:
        raise RecordError(path, "too large to read") from None
    if len(data) > limit:
        raise RecordError(path, f"larger than {limit // (1024 * 1024)} MiB: not a record trtcap can use")
    return data
