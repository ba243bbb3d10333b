"""Isolation: Torch-TensorRT's global state held around each test and fixture, a leak named and restored in place.

``frames`` holds the rule (a frame per test and fixture) and drives the specs; ``finalizers`` reads from pytest's
lists which fixture ends run no code and where a test's end check goes; ``held_state`` lists every spec the
plugin holds; ``held_registry`` holds the converter registry and its compilation settings; ``inventory`` says
which spec holds what, and why the rest of Torch-TensorRT's module-level state is not held; ``leaks`` words a leak
and warns (or errs) with the classes here, exported from ``pytest_trtcap`` so warnings filters can name them.

Loaded once a session uses the plugin, never with the plugin: importing the plugin is paid by every pytest run of
the environment.

PYTEST_DONT_REWRITE: loaded in every pytest run (isolation acts in every session); no assert to rewrite.
"""


class TrtcapLeakWarning(UserWarning):
    """A test left Torch-TensorRT's global state (registry, ATOMIC_SUBGRAPHS, ...) changed."""


class TrtcapLeakError(AssertionError):
    """Raised in teardown for a test that leaked global state, under ``--trtcap-strict`` or a filter that makes
    :class:`TrtcapLeakWarning` an error."""


# Printed (and so in a ``trtcap`` signature) under the public name a filter or an ``except`` uses, which stays put
# when code moves inside the plugin; ``pytest_trtcap`` answers it (and pickling, under xdist) on first use.
TrtcapLeakWarning.__module__ = TrtcapLeakError.__module__ = "pytest_trtcap"
