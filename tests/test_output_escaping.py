"""``pytest_trtcap.escaping.one_line``: run-made text on one of our lines, escaped so it cannot start a line, recolour
the terminal or reorder what follows it."""

from __future__ import annotations

import pytest

from pytest_trtcap.escaping import one_line


@pytest.mark.parametrize("raw, shown", [
    ("a\nb", "a\\nb"),
    ("a\r\nPASSED x", "a\\r\\nPASSED x"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("tab\there", "tab\\there"),
    ("nul\x00", "nul\\x00"),
    ("next line\x85", "next line\\x85"),
    ("line\u2028separator", "line\\u2028separator"),
    ("\u202egnp.exe", "\\u202egnp.exe"),
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("lone \udcff surrogate", "lone \\udcff surrogate"),
])
def test_control_format_and_surrogate_characters_are_escaped(raw: str, shown: str) -> None:
    assert one_line(raw) == shown


def test_printable_text_is_left_as_it_is() -> None:
    text = "plain → ünïcode 日本 [7.5] (call) ::test"
    assert one_line(text) == text


def test_anything_is_shown_through_str() -> None:
    class Named:
        def __str__(self) -> str:
            return "two\nlines"

    assert one_line(Named()) == "two\\nlines"
    assert one_line(7.5) == "7.5"
