"""The cyclic garbage collector paused around bulk work on records.

Loading and comparing 100,000-test records makes only acyclic dicts and lists; the collector's full passes over
them would otherwise take about half the time. One home for the switch, so it is always switched back on.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic collector inside the block; re-enable it after, only if it was enabled before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
