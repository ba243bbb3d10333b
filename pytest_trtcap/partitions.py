"""Partition-count expectations keyed off the same predicate as the guards."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import trtcap_guards as guards
from trtcap_guards.tooling import int_pair

from .escaping import one_line

ACC_PREFIX = "_run_on_acc"
GPU_PREFIX = "_run_on_gpu"


class PartitionCounts(NamedTuple):
    """TensorRT (``_run_on_acc*``) and PyTorch (``_run_on_gpu*``) blocks of a partitioned module."""

    acc: int
    gpu: int


class Partitioned(NamedTuple):
    """What :func:`partition` returns: the partitioned ``torch.fx.GraphModule`` (its ``_run_on_acc*`` blocks go to
    TensorRT, ``_run_on_gpu*`` to PyTorch) and its block counts, in the shape ``expected_partition_counts`` gives.
    ``assert_partition_counts``, ``count_partitions``, ``describe_partitions`` and the audit's functions take it as
    they take the module; ``module, counts = partition(...)`` unpacks it."""

    module: Any
    counts: PartitionCounts


def module_of(value: Any) -> Any:
    """The module of a :class:`Partitioned`; anything else as it is."""
    return value.module if isinstance(value, Partitioned) else value


def _counts(value: PartitionCounts | tuple[int, int], name: str) -> PartitionCounts:
    pair = int_pair(value) if isinstance(value, tuple) else None
    if pair is None:
        raise ValueError(f"{name}: expected (acc, gpu) non-negative integers, got {value!r}")
    return PartitionCounts(*pair)


def expected_partition_counts(
    default: PartitionCounts | tuple[int, int],
    turing: PartitionCounts | tuple[int, int] | None = None,
    settings: Any = None,
    *,
    releases: Mapping[str, Mapping[str, PartitionCounts | tuple[int, int]]] | None = None,
) -> PartitionCounts:
    """``turing`` when the build targets Turing on TensorRT-RTX, else ``default``.

    Where Turing is a target, ``turing`` must be given (here or by the matching ``releases`` entry): counts that
    hold on Turing too say so with ``turing=`` equal to ``default``, and a forgotten one is a ``ValueError``, never
    the default in silence. Where Turing is no target, ``default`` alone is enough.

    Counts depend on the installed release's lowering passes as well as on the targets (2.14 fuses a pad into the
    convolution after it; 2.12 leaves two nodes), so ``releases`` overrides either count on some releases:
    ``{"<2.14": {"turing": (2, 1)}}``. Each key is a version specifier (PEP 440); the first that admits the
    installed Torch-TensorRT replaces the counts its value names. Everything given is checked on every release.
    """
    chosen = {"default": _counts(default, "default")}
    if turing is not None:
        chosen["turing"] = _counts(turing, "turing")  # checked on every target, not only on Turing runs
    if releases is not None:
        chosen.update(_release_override(releases))
    decision = guards.capability_decision(settings)
    if not decision.targets_turing:
        return chosen["default"]
    if "turing" not in chosen:
        acc, gpu = chosen["default"]
        raise ValueError(
            f"expected_partition_counts: no turing= counts, and the targets include Turing "
            f"({one_line(decision.describe())}): give the counts on Turing, turing=({acc}, {gpu}) if they are the "
            "default's")
    return chosen["turing"]


def _release_override(releases: Any) -> dict[str, PartitionCounts]:
    """The counts of the first entry of ``releases`` whose specifier admits the installed Torch-TensorRT."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(releases, Mapping):
        raise ValueError(f"releases: expected {{version specifier: {{'default'|'turing': (acc, gpu)}}}}, "
                         f"got {one_line(repr(releases))}")
    found: dict[str, PartitionCounts] | None = None
    version = guards.torch_tensorrt_version()
    for spec, counts in releases.items():
        try:
            specifier = SpecifierSet(spec)
        except (InvalidSpecifier, TypeError):
            raise ValueError(f"releases: {one_line(repr(spec))} is not a version specifier (e.g. '<2.14')") from None
        if not isinstance(counts, Mapping) or not counts or set(counts) - {"default", "turing"}:
            raise ValueError(f"releases[{spec!r}]: expected a mapping with 'default' and/or 'turing', "
                             f"got {one_line(repr(counts))}")
        named = {key: _counts(value, f"releases[{spec!r}][{key!r}]") for key, value in counts.items()}
        if found is None and version is not None and specifier.contains(version, prereleases=True):
            found = named
    if version is None:
        raise ValueError("releases: no Torch-TensorRT is installed, so no release can be matched")
    return found or {}


def _blocks(module: Any) -> list[tuple[str, Any]]:
    return [(n, c) for n, c in module.named_children() if n.startswith((ACC_PREFIX, GPU_PREFIX))]


def count_partitions(module: Any) -> PartitionCounts:
    """Count the ``_run_on_acc*`` and ``_run_on_gpu*`` children of a partitioned module."""
    names = [n for n, _ in _blocks(module_of(module))]
    return PartitionCounts(sum(n.startswith(ACC_PREFIX) for n in names), sum(n.startswith(GPU_PREFIX) for n in names))


def describe_partitions(module: Any) -> str:
    lines = []
    for name, child in _blocks(module_of(module)):
        graph = getattr(child, "graph", None)
        ops = [str(n.target) for n in graph.nodes if n.op == "call_function"] if graph is not None else []
        lines.append(f"  {name}: {', '.join(ops) or '(no call_function nodes)'}")
    return "\n".join(lines) or "  (no partitions)"


def assert_partition_counts(
    module: Any, expected: PartitionCounts | tuple[int, int], settings: Any = None
) -> None:
    """Assert the block counts; the failure lists each block's nodes and the predicate's decision."""
    expected = _counts(expected, "expected")
    actual = count_partitions(module)
    if actual != expected:
        decision = guards.capability_decision(settings)
        raise AssertionError(
            f"partition counts {tuple(actual)} != expected {tuple(expected)} (acc, gpu)\n"
            f"blocks:\n{describe_partitions(module)}\n"
            f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"
        )


#: The hierarchical partitioner's name for the TensorRT backend (``backend_support_map`` and its block names).
TENSORRT_BACKEND = "tensorrt"


def on_tensorrt(block: str) -> bool:
    """Whether a child named ``block`` runs on TensorRT. The fast and global partitioners name their blocks
    ``_run_on_acc_<n>`` (the resource partitioner adds ``_resource_split_<m>``); the hierarchical one names each
    backend's ``_run_on_acc_<backend>_<n>``, and only its ``tensorrt`` backend (its default name) is TensorRT."""
    if not block.startswith(ACC_PREFIX):
        return False
    first = block[len(ACC_PREFIX):].lstrip("_").split("_", 1)[0]
    return first.isdigit() or first in ("", TENSORRT_BACKEND)
