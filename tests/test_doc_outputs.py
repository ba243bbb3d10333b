"""Every quoted command output in the user docs is what that command prints.

A quote is a ```` ```console ```` block of ``README.md`` or ``docs/*.md``: its first line is ``$ COMMAND``, the rest
are lines of that command's output. The command is run (``pytest``, ``python`` and ``trtcap`` from this
environment, in a copy of ``examples/`` and ``tests/lane_suite/``, with no GPU visible and ``COLUMNS=80``) and the
quoted lines are compared with its standard output line by line, in order: a line ``...`` stands for any number of
lines left out, and only there may lines be left out; a quote that does not start (end) with ``...`` starts (ends)
where the output does. Only durations, the length of rule lines (``=====``, ``-----``, ``─────``) and runs of spaces
are compared loosely. Each command runs once for all the quotes of it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CONSOLE = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)
GAP = "..."
DURATION = re.compile(r"\b\d+(?:\.\d+)?s\b(?: \(\d+:\d\d:\d\d\))?")
RULE = re.compile(r"([=\-─])\1{2,}")


class Quote(NamedTuple):
    where: str  # doc:line of the ``$`` line
    command: str
    lines: list[str]


def quotes() -> list[Quote]:
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in CONSOLE.finditer(text):
            first, *rest = match.group(1).rstrip("\n").split("\n")
            line = text.count("\n", 0, match.start()) + 2
            where = f"{doc.relative_to(ROOT)}:{line}"
            assert first.startswith("$ "), f"{where}: a console block starts with '$ COMMAND'"
            found.append(Quote(where, first[2:], rest))
    return found


def _normal(line: str) -> str:
    return " ".join(RULE.sub(lambda m: m.group(1) * 3, DURATION.sub("<duration>", line)).split())


def _find(chunk: list[str], out: list[str], start: int) -> int:
    for at in range(start, len(out) - len(chunk) + 1):
        if out[at:at + len(chunk)] == chunk:
            return at
    return -1


def mismatch(quoted: list[str], printed: list[str]) -> str | None:
    """Why ``quoted`` is not ``printed`` with lines left out only where it says ``...``; None when it is."""
    out = [_normal(line) for line in printed]
    chunks: list[list[str]] = [[]]
    for line in quoted:
        if line.strip() == GAP:
            chunks.append([])
        else:
            chunks[-1].append(_normal(line))
    position = 0
    for index, chunk in enumerate(chunks):
        if not chunk:
            continue
        at = _find(chunk, out, position)
        if at < 0:
            n = max(n for n in range(len(chunk)) if _find(chunk[:n], out, position) >= 0)
            after = f" (after {chunk[n - 1]!r})" if n else ""
            return f"not printed where the quote puts it: {chunk[n]!r}{after}"
        if index == 0 and at != 0:
            return f"the output does not start with {chunk[0]!r} (write '...' before it)"
        position = at + len(chunk)
    if chunks[-1] and position != len(out):
        return f"the output goes on after {chunks[-1][-1]!r} (write '...' after it)"
    return None


#: The README's quickstart runs in a project of its own: ``tests/test_quickstart_project.py`` runs these quotes.
QUICKSTART = ".venv/bin/pytest test_quickstart.py "
#: The README runs the programs from the environment it made; they are this environment's here.
VENV = ".venv/bin/"


def _argv(command: str) -> tuple:
    words = shlex.split(command.replace(VENV, "", 1) if command.startswith(VENV) else command)
    env = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    programs = {"pytest": [sys.executable, "-m", "pytest"], "python": [sys.executable],
                "trtcap": [str(Path(sys.executable).with_name("trtcap"))]}
    assert words and words[0] in programs, f"the docs quote a command this test cannot run: {command!r}"
    return [*programs[words[0]], *words[1:]], env


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[str]]:
    """``printed(command)``: the command's standard output lines, run once per command in a copy of the suites."""
    workspace = tmp_path_factory.mktemp("docs-workspace")
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    shutil.copytree(ROOT / "examples", workspace / "examples", ignore=ignore)
    shutil.copytree(ROOT / "tests" / "lane_suite", workspace / "tests" / "lane_suite", ignore=ignore)
    outputs: dict[str, list[str]] = {}

    def run(command: str) -> list[str]:
        command = command.replace(VENV, "", 1) if command.startswith(VENV) else command  # one run for both
        if command not in outputs:
            argv, extra = _argv(command)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_", "LANE_"))}
            env.update(CUDA_VISIBLE_DEVICES="", COLUMNS="80", **extra)
            done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=900)
            outputs[command] = done.stdout.splitlines()
        return outputs[command]

    return run


@pytest.mark.parametrize("quote", [q for q in quotes() if not q.command.startswith(QUICKSTART)],
                         ids=lambda q: q.where)
def test_the_quoted_output_is_what_the_command_prints(quote: Quote, printed: Callable[[str], list[str]]) -> None:
    output = printed(quote.command)
    problem = mismatch(quote.lines, output)
    assert problem is None, f"{quote.where}: $ {quote.command}\n{problem}\n--- printed:\n" + "\n".join(output[-60:])


# --- the comparison itself -----------------------------------------------------------------------------------------

PRINTED = ["header", "SKIPPED [4] examples/test_x.py:40: reason", "audit line", "gpu-less line",
           "===== 8 passed in 4.63s ====="]


@pytest.mark.parametrize("quoted, problem", [
    (["...", "SKIPPED [4] examples/test_x.py:41: reason", "..."], "not printed"),  # a wrong line number
    (["...", "SKIPPED [4] examples/test_x.py:40: reason", "gpu-less line", "..."], "not printed"),  # unmarked gap
    (["...", "gpu-less line", "audit line", "..."], "not printed"),  # order
    (["SKIPPED [4] examples/test_x.py:40: reason", "..."], "does not start"),
    (["...", "audit line"], "goes on after"),
    (["...", "audit line", "invented line", "..."], "not printed"),
])
def test_a_quote_that_differs_from_the_output_is_refused_saying_how(quoted: list[str], problem: str) -> None:
    assert problem in (mismatch(quoted, PRINTED) or "")


@pytest.mark.parametrize("quoted", [
    ["header", "...", "audit line", "gpu-less line", "=== 8 passed in 12.5s ==="],
    ["...", "SKIPPED  [4]   examples/test_x.py:40: reason", "..."],
    PRINTED,
])
def test_a_faithful_quote_passes(quoted: list[str]) -> None:
    assert mismatch(quoted, PRINTED) is None
