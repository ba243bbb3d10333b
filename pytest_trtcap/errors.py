"""The warnings and the error the plugin issues; exported from ``pytest_trtcap`` so warnings filters can name
them. ``UnsupportedTargetWarning`` belongs to the guards (``trtcap_guards``), which issue it too; it is the same
class under both names."""

from trtcap_guards import UnsupportedTargetWarning  # noqa: F401 - re-exported


class TrtcapLeakWarning(UserWarning):
    """A test left Torch-TensorRT's global state (registry, ATOMIC_SUBGRAPHS, ...) changed."""


class TrtcapLeakError(AssertionError):
    """Raised in teardown for a test that leaked global state, under ``--trtcap-strict`` or a filter that makes
    :class:`TrtcapLeakWarning` an error."""
