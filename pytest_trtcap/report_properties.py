"""The plugin's entries in a test report: how a leak, a capability skip or the audit's findings travel from the
process that ran the test (an xdist worker included) to the ``trtcap`` summary.

They ride in a report attribute of their own, ``trtcap_properties``, copied onto each report as pytest copies
``user_properties``, and serialized with the report across xdist. Not in ``user_properties``: that list is the
project's, and junitxml (and other reporters) write every entry of it into the project's reports. A report of a
test this process ran is read only for the pairs the plugin appended; one that crossed as a copy (an xdist
worker's, a forked child's) for every well-formed pair under the key.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Set, Tuple

import pytest

ATTRIBUTE = "trtcap_properties"
_PAIRS = pytest.StashKey[List[Tuple[str, Any]]]()  # on the item: every pair appended for it so far


class OwnProperties:
    """The pairs one plugin appended, kept alive so that an identity check cannot match a recycled ``id``."""

    def __init__(self) -> None:
        self._own: Dict[int, Tuple[str, Any]] = {}
        self._ran_here: Set[str] = set()  # node ids of the tests this process ran

    def ran_here(self, item: Any) -> None:
        self._ran_here.add(item.nodeid)

    def append(self, item: Any, key: str, value: Any) -> None:
        pair = (key, value)
        item.stash.setdefault(_PAIRS, []).append(pair)
        self._own[id(pair)] = pair
        self._ran_here.add(item.nodeid)

    def read(self, report: Any, *keys: str) -> Iterator[Tuple[str, Any]]:
        """``(key, value)`` of each of ``report``'s entries under ``keys`` that the plugin appended."""
        here = report.nodeid in self._ran_here
        for entry in getattr(report, ATTRIBUTE, None) or ():
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and entry[0] in keys):
                continue
            if not here or self._own.get(id(entry)) is entry:
                yield entry[0], entry[1]


def attach(item: Any, report: Any) -> None:
    """Give ``report`` the pairs appended for ``item`` so far (called as each of its reports is made)."""
    pairs = item.stash.get(_PAIRS, None)
    if pairs:
        setattr(report, ATTRIBUTE, list(pairs))
