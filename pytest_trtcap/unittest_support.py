"""Capability decisions for ``unittest.TestCase`` suites, which cannot take pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import trtcap_guards as guards

from .markers import SKIP_PREFIX
from .partitions import PartitionCounts, expected_partition_counts


class _Answer:
    """A read-only attribute answered on the class as on an instance: ``setUpClass`` reads ``cls.trt_targets_turing``,
    where a ``property`` would give itself (a truthy object: every target would look like Turing). Each read asks
    the predicate again, as the properties did: a fixture or test may declare other targets."""

    def __init__(self, decide: Callable[[], Any]) -> None:
        self.decide = decide
        self.__doc__ = decide.__doc__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        return self.decide()


def _capability() -> guards.CapabilityDecision:
    """The predicate's decision with its provenance (targets, source, backend, reason)."""
    return guards.capability_decision()


def _targets_turing() -> bool:
    """True when the session's build targets Turing (SM 7.5) on TensorRT-RTX."""
    return guards.trt_rtx_targets_turing()


def _gemm_dtype() -> Any:
    """Skips the test, with the fixture's reason, where torch is not installed (``unittest.SkipTest``: the plain
    unittest runner knows it too)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        import unittest

        reason = f"{SKIP_PREFIX}turing_safe_gemm_dtype needs torch, which is not installed"
        raise unittest.SkipTest(reason) from None
    return guards.turing_safe_gemm_dtype()


class TrtCapabilityMixin:
    """Mix into a ``TestCase``: ``self.trt_targets_turing``, ``self.turing_safe_gemm_dtype``,
    ``self.trt_capability`` and ``self.expected_partition_counts(default, turing)``, all from the one predicate;
    the same through ``cls`` in ``setUpClass``."""

    trt_capability = _Answer(_capability)
    trt_targets_turing = _Answer(_targets_turing)
    turing_safe_gemm_dtype = _Answer(_gemm_dtype)

    @staticmethod
    def expected_partition_counts(
        default: PartitionCounts | tuple[int, int],
        turing: PartitionCounts | tuple[int, int] | None = None,
        *,
        releases: Mapping[str, Mapping[str, PartitionCounts | tuple[int, int]]] | None = None,
    ) -> PartitionCounts:
        return expected_partition_counts(default, turing, releases=releases)
