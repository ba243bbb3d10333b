"""Capability decisions for ``unittest.TestCase`` suites, which cannot take pytest fixtures."""

from __future__ import annotations

from typing import Any, Optional, Tuple, Union

import trtcap_guards as guards

from .markers import SKIP_PREFIX
from .partitions import PartitionCounts, expected_partition_counts


class TrtCapabilityMixin:
    """Mix into a ``TestCase``: ``self.trt_targets_turing``, ``self.turing_safe_gemm_dtype``,
    ``self.trt_capability`` and ``self.expected_partition_counts(default, turing)``, all from the one predicate."""

    @property
    def trt_capability(self) -> guards.CapabilityDecision:
        return guards.capability_decision()

    @property
    def trt_targets_turing(self) -> bool:
        return guards.trt_rtx_targets_turing()

    @property
    def turing_safe_gemm_dtype(self) -> Any:
        """Skips the test, with the fixture's reason, where torch is not installed (``unittest.SkipTest``: the
        plain unittest runner knows it too)."""
        try:
            import torch  # noqa: F401
        except ImportError:
            import unittest

            reason = f"{SKIP_PREFIX}turing_safe_gemm_dtype needs torch, which is not installed"
            raise unittest.SkipTest(reason) from None
        return guards.turing_safe_gemm_dtype()

    def expected_partition_counts(
        self,
        default: Union[PartitionCounts, Tuple[int, int]],
        turing: Optional[Union[PartitionCounts, Tuple[int, int]]] = None,
    ) -> PartitionCounts:
        return expected_partition_counts(default, turing)
