"""Run-made text shown on one of the plugin's or the command's lines: one home for how it is made safe.

Test ids, skip reasons, exception messages, leaked objects' names, hook values and file names come from the
project, and may hold line breaks, terminal escapes or bidirectional controls. Shown raw, they would print
lines that look like pytest's or ours (a forged ``RESULT:`` or ``trtcap:`` line) or recolour the terminal.

PYTEST_DONT_REWRITE: loaded in every pytest run (isolation acts in every session); no assert to rewrite.
"""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def one_line(text: Any) -> str:
    """``text`` on one line: control, format and lone-surrogate characters shown as escapes (``\\n``, ``\\x1b``,
    ``\\u202e``)."""
    return _UNSAFE.sub(_escape, str(text))
