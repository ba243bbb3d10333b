"""The plugin's entries in a test report's ``user_properties``: how a leak, a capability skip or the audit's findings
travel from the process that ran the test (an xdist worker included) to the ``trtcap`` summary.

The list is the project's too (``record_property``, ``item.user_properties``), holding entries of any shape under
any key. For a test this process ran only the pairs the plugin appended count, so an entry a test wrote under the
same key neither feeds the summary nor, being no pair, stops the run. A report of a test run elsewhere (an xdist
worker's, a forked child's) crossed as a copy: there every well-formed pair under the key is taken.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Set, Tuple


class OwnProperties:
    """The pairs one plugin appended, kept alive so that an identity check cannot match a recycled ``id``."""

    def __init__(self) -> None:
        self._own: Dict[int, Tuple[str, Any]] = {}
        self._ran_here: Set[str] = set()  # node ids of the tests this process ran

    def ran_here(self, item: Any) -> None:
        self._ran_here.add(item.nodeid)

    def append(self, item: Any, key: str, value: Any) -> None:
        pair = (key, value)
        item.user_properties.append(pair)
        self._own[id(pair)] = pair
        self._ran_here.add(item.nodeid)

    def read(self, report: Any, *keys: str) -> Iterator[Tuple[str, Any]]:
        """``(key, value)`` of each of ``report``'s entries under ``keys`` that the plugin appended."""
        here = report.nodeid in self._ran_here
        for entry in report.user_properties:
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and entry[0] in keys):
                continue
            if not here or self._own.get(id(entry)) is entry:
                yield entry[0], entry[1]
