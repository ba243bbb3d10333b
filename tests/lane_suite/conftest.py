"""Conftest of the GPU-less lane's acceptance suite, written the way Torch-TensorRT's partitioning conftest is.

Like Torch-TensorRT's own conftests it imports ``torch_tensorrt`` at module level. On a host without a CUDA
device that import raises ``RuntimeError: Found no NVIDIA driver``; under the trtcap plugin it succeeds because
the plugin answers the two import-time device queries before this file is imported.

``reset_torch_tensorrt_state`` is the suite's own, hand-written isolation, modelled on Torch-TensorRT's: it puts
the converter registry, its compilation settings and disallowed targets back after each test and clears the
atomic-subgraph trace cache. Like the upstream fixture it does NOT restore ``ATOMIC_SUBGRAPHS``.

``LANE_SELF_SHIM=1`` is only for the comparison run with ``-p no:trtcap``: this file then answers the device
queries itself and installs the same guards (targets from ``TRTCAP_TARGET_SM``), so the suite runs with the
guards but without the plugin's isolation.
"""

import os

import pytest

if os.environ.get("LANE_SELF_SHIM") == "1":
    import trtcap_guards as guards

    guards.import_torch_tensorrt()
    guards.install()

import torch_tensorrt  # noqa: E402,F401  (module level, as Torch-TensorRT's conftests do)
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (  # noqa: E402
    DYNAMO_ATEN_CONVERTERS,
    DYNAMO_CONVERTERS,
)
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import trace_atomic_graph  # noqa: E402


def _clear_trace_cache() -> None:
    cache_clear = getattr(trace_atomic_graph, "cache_clear", None)
    if cache_clear is not None:
        cache_clear()


@pytest.fixture(autouse=True)
def reset_torch_tensorrt_state():
    """Snapshot the converter registry before the test and put it back afterwards (not ATOMIC_SUBGRAPHS)."""
    converters = {target: list(entries) for target, entries in DYNAMO_ATEN_CONVERTERS.items()}
    settings = DYNAMO_CONVERTERS.compilation_settings
    disallowed = set(DYNAMO_CONVERTERS.disallowed_targets or ())
    _clear_trace_cache()
    try:
        yield
    finally:
        DYNAMO_ATEN_CONVERTERS.clear()
        DYNAMO_ATEN_CONVERTERS.update({target: list(entries) for target, entries in converters.items()})
        if settings is None:
            DYNAMO_CONVERTERS.compilation_settings = None
        else:
            DYNAMO_CONVERTERS.set_compilation_settings(settings)
        DYNAMO_CONVERTERS.set_disallowed_targets(disallowed)
        _clear_trace_cache()
