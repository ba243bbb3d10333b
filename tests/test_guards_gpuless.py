"""Answering Torch-TensorRT's two import-time device queries (``trtcap_guards.gpuless``): what it accepts."""

from __future__ import annotations

import pytest

import trtcap_guards as guards


@pytest.mark.parametrize("capability", [(-1, 5), (True, 5), (7.9, 5), (7, 5, 1), (100, 0), (7, 10), "7.5", "ab"])
@pytest.mark.usefixtures("tt")  # torch_tensorrt imported: the queries may already have been answered
def test_a_capability_that_is_no_capability_is_refused_naming_it(capability):
    """The answer is what torch_tensorrt reads as the device's capability: a pair held to the range every other
    source is (major 0-99, minor 0-9), never truncated (7.9 -> 7) or taken from a bool, and named when refused."""
    before = repr(guards.gpu_less_import_status())  # one live object: compare what it says
    with pytest.raises(ValueError, match=r"^answer_device_queries: invalid compute capability"):
        guards.answer_device_queries(capability)
    assert repr(guards.gpu_less_import_status()) == before
