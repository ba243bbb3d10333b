"""The warning and error a leaking test gets; exported from ``pytest_trtcap`` so warnings filters can name them."""


class TrtcapLeakWarning(UserWarning):
    """A test left Torch-TensorRT's global state (registry, ATOMIC_SUBGRAPHS, ...) changed."""


class TrtcapLeakError(AssertionError):
    """Raised in teardown for a test that leaked global state, under ``--trtcap-strict`` or a filter that makes
    :class:`TrtcapLeakWarning` an error."""
