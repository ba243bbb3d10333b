"""Isolation: Torch-TensorRT's global state held around each test and fixture, to the contract in docs/plugin.md.

``ledger`` is the rule (units, layers of changes, the judgement when a unit ends), ``drive`` the pytest hooks that
say which unit runs and when each ends, ``held_state`` and ``held_registry`` what is held and how it is compared and
put back. Here: how a leak is named, and the warning (or error) that reports it.

PYTEST_DONT_REWRITE: loaded in every pytest run (isolation acts in every session); no assert to rewrite.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest


class TrtcapLeakWarning(UserWarning):
    """A test left Torch-TensorRT's global state (registry, ATOMIC_SUBGRAPHS, ...) changed."""


class TrtcapLeakError(AssertionError):
    """Raised in teardown for a test that leaked global state, under ``--trtcap-strict`` or a filter that makes
    :class:`TrtcapLeakWarning` an error."""


# Printed (and so in a ``trtcap`` signature) under the public name a filter or an ``except`` uses.
TrtcapLeakWarning.__module__ = TrtcapLeakError.__module__ = "pytest_trtcap"


#: pytest's fixtures for unittest and xunit set-up methods, named after the methods a user wrote.
_SETUP_FIXTURES = (
    ("_unittest_setUpClass_fixture_", "{}.setUpClass/tearDownClass"),
    ("_unittest_setup_method_fixture_", "{}.setup_method/teardown_method"),
    ("_xunit_setup_module_fixture_", "{} setup_module/teardown_module"),
    ("_xunit_setup_class_fixture_", "{}.setup_class/teardown_class"),
    ("_xunit_setup_function_fixture_", "{} setup_function/teardown_function"),
    ("_xunit_setup_method_fixture_", "{}.setup_method/teardown_method"),
)


def fixture_subject(argname: str, scope: str, nodeid: str, setup_for: str) -> str:
    """``test_b (fixture 'f', module scope, set up for test_a)``; set-up methods by their own names."""
    what = next((form.format(argname[len(prefix):]) for prefix, form in _SETUP_FIXTURES
                 if argname.startswith(prefix)), f"fixture {argname!r}")
    since = "" if setup_for in ("", nodeid) else f", set up for {setup_for}"
    return f"{nodeid} ({what}, {scope} scope{since})"


def report_leak(item: pytest.Item | None, subject: str, changes: list[str], strict: Any) -> TrtcapLeakError | None:
    """Warn about a leak, at the test's line (``item``; None: found outside any test); the error to raise under
    ``--trtcap-strict`` (``strict``) or a filter that makes warnings errors."""
    what = "; ".join(changes)
    warning = TrtcapLeakWarning(f"{subject} leaked global state: {what}")
    try:
        if item is None:
            warnings.warn(warning, stacklevel=1)
        else:
            path, lineno, _ = item.location
            warnings.warn_explicit(warning, TrtcapLeakWarning, filename=str(item.config.rootpath / path),
                                   lineno=(lineno or 0) + 1)
    except Warning as exc:  # -W error / filterwarnings = error: an error of this test, not of pytest
        return TrtcapLeakError(
            f"trtcap: {subject} leaked global state ({type(exc).__name__} is an error under the "
            f"warnings filter): {what}"
        )
    if strict:
        return TrtcapLeakError(f"trtcap: {subject} leaked global state (--trtcap-strict): {what}")
    return None
