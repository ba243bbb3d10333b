"""The plugin's fixtures: the capability decision and what follows from it, for tests that take fixtures.

Registered by the plugin's ``pytest_configure`` (so ``-p no:trtcap`` leaves them out too), in every pytest run of
an environment: nothing more loads until a fixture is set up, and torch only with a fixture that needs it.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from trtcap_guards import CapabilityDecision

    from .partitions import PartitionCounts, Partitioned


def _need_torch(fixture: str) -> Any:
    try:
        import torch
    except ImportError:
        from .markers import SKIP_PREFIX

        pytest.skip(f"{SKIP_PREFIX}{fixture} needs torch, which is not installed")
    return torch


@pytest.fixture
def trt_capability() -> CapabilityDecision:
    """The predicate's decision with its provenance (targets, source, backend, reason)."""
    from trtcap_guards import capability_decision

    return capability_decision()


@pytest.fixture
def trt_targets_turing(trt_capability: CapabilityDecision) -> bool:
    """True when the session's build targets Turing (SM 7.5) on TensorRT-RTX."""
    return trt_capability.targets_turing


@pytest.fixture
def turing_safe_gemm_dtype() -> Any:
    """``torch.float16`` where FP32 GEMMs cannot be served on the targets, else ``torch.float32``."""
    _need_torch("turing_safe_gemm_dtype")
    from trtcap_guards import turing_safe_gemm_dtype

    return turing_safe_gemm_dtype()


@pytest.fixture
def expected_partition_counts() -> Callable[..., PartitionCounts]:
    """Factory: ``expected_partition_counts(default=(acc, gpu), turing=(acc, gpu), releases={...})``: the predicate
    chooses, per release where ``releases`` says so."""
    from .partitions import expected_partition_counts as choose

    return choose


@pytest.fixture
def partition() -> Callable[..., Partitioned]:
    """``pytest_trtcap.partition``: ``partition(model, *example_inputs, **settings)`` exports, lowers and partitions
    with Torch-TensorRT's own code under the declared targets, and returns ``Partitioned(module, counts)``."""
    _need_torch("partition")
    from .partitioner import partition as run

    return run
