"""Hook specifications of pytest-trtcap, registered from ``pytest_addhooks``.

Implement them in a ``conftest.py`` or a plugin of your own.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

hookspec = pytest.hookspec


@hookspec(firstresult=True)
def pytest_trtcap_target_capabilities(config: pytest.Config) -> Any | None:
    """Supply the session's target compute capabilities, e.g. from a CI matrix.

    Return ``"7.5,8.9"``, ``[(7, 5), (8, 9)]`` or ``None`` to pass. Consulted only when neither
    ``--trt-target-sm``, ``TRTCAP_TARGET_SM`` nor the ini key ``trt_target_sm`` gives a value.
    The first non-None result wins (if none gives one, the targets stay undeclared). The value is
    held to the option's rules (a bad one is a usage error naming this hook, your file and the value) and a
    target TensorRT-RTX does not build for warns like the option's.
    """


@hookspec
def pytest_trtcap_isolated_state(
    config: pytest.Config,
) -> Iterable[tuple[str, Callable[[], Any], Callable[[Any], None]]] | None:
    """Add global state to hold before each test and restore after it.

    Return ``(label, snapshot, restore)`` entries: ``snapshot()`` returns a value compared with ``!=``
    against a later snapshot; ``restore(value)`` puts it back in place. A difference left by a test is
    reported as a leak under ``label``, like the built-in registry and ``ATOMIC_SUBGRAPHS`` entries.
    Return a list (or tuple) of entries, never one entry alone; anything else is a usage error naming this
    hook, your file and the value, before the first test.
    """
