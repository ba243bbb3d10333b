"""The placement audit: nodes a partitioner put on TensorRT that the declared targets cannot serve.

The guards act through the converter registry's validators; the audit does not ask them whether a node is
servable. It reads each node of every ``_run_on_acc*`` block itself (its op, and its operands' dtypes and ranks
from ``meta["val"]``) and asks the rules table, so a target the guards never saw (a new converter, a node created by
a lowering pass, guards switched off) still shows up. An unpartitioned graph is read the same way, node by node,
for the nodes Torch-TensorRT's own operator support would offer to TensorRT (there the validators take part, as
they do in the partitioner). A module it cannot see into (compiled blocks hold engines, not graphs) is refused:
an empty answer would read as a pass. Works on CPU: nothing is built or run.

Under ``--trtcap-audit`` every partition Torch-TensorRT produces during the run is audited and reported per test.
Once the suite has imported torch_tensorrt, the partitioner entry points of ``torch_tensorrt.dynamo.partitioning``
(the attributes ``dynamo.compile`` and suites call) are wrapped: each partitioned module goes through
:func:`unservable_in_partition`, and what it finds is attributed to the running test. The originals are put back
when the session ends. Resource partitioning only splits ``_run_on_acc*`` blocks further (it never moves a node
between TensorRT and PyTorch), so the partitions it starts from are the ones audited. Loaded when the setting is
on or a test calls the functions above.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Generator, Iterator
from typing import Any, NamedTuple

import pytest

import trtcap_guards as guards
from trtcap_guards import RULES, Rule
from trtcap_guards.tooling import converter_registry, loaded_converter_registry, target_name_of

from .escaping import one_line
from .partitions import ACC_PREFIX, GPU_PREFIX, module_of, on_tensorrt
from .report import OwnProperties


class UnservablePlacement(NamedTuple):
    """One node placed on TensorRT that a rule says the declared targets cannot serve."""

    block: str  # the ``_run_on_acc*`` child holding it (a dotted path when nested)
    node: str  # the fx node's name
    op: str  # its target, e.g. ``aten.linear.default``
    rule: str  # the rule's name, e.g. ``fp32_gemm``

    def describe(self) -> str:
        rule = _RULES_BY_NAME.get(self.rule)
        what = f"{rule.cannot_serve} on SM {rule.capability[0]}.{rule.capability[1]}" if rule else self.rule
        return f"{self.block}: {self.node} ({self.op}) -> {self.rule}: {what}"


_RULES_BY_NAME = {r.name: r for r in RULES}


#: The block a node of an unpartitioned graph is named by: nothing placed it yet, Torch-TensorRT would offer it.
UNPARTITIONED = "(not partitioned)"
_INSTEAD = ("pass the module a Torch-TensorRT partitioner returned, the exported or lowered GraphModule, or run "
            "the suite with --trtcap-audit")
Located = tuple[str, Any]  # (block, fx node)


def _named_modules(module: Any) -> list[tuple[str, Any]]:
    module = module_of(module)  # pytest_trtcap.partition's result
    named = getattr(module, "named_modules", None)
    if not callable(named):
        hint = " unpack the partitioner's result (module, ...)" if isinstance(module, tuple) else ""
        raise TypeError(
            "unservable_placements: expected the torch.nn.Module a Torch-TensorRT partitioner returned, "
            f"got a {type(module).__name__}:{hint or ' ' + repr(module)[:80]}"
        )
    return list(named())


def _acc_blocks(named: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The TensorRT blocks, each with its graph; one without (a compiled engine) is refused, never skipped."""
    blocks = []
    for name, child in named:
        if not on_tensorrt(name.rsplit(".", 1)[-1]):
            continue
        if getattr(child, "graph", None) is None:
            raise TypeError(
                f"unservable_placements: cannot see into {name}, a {type(child).__name__} (a compiled TensorRT "
                "engine, no graph): pass the module a Torch-TensorRT partitioner returned (before compile), or run "
                "the suite with --trtcap-audit")
        blocks.append((name, child))
    return blocks


def _in_blocks(blocks: list[tuple[str, Any]]) -> Iterator[Located]:
    for block, child in blocks:
        for node in child.graph.nodes:
            if node.op == "call_function":
                yield block, node


def _offered(module: Any, settings: Any) -> Iterator[Located]:
    """The nodes of an unpartitioned graph that Torch-TensorRT's partitioners would offer to TensorRT, asked of
    their own operator support (a converter accepts the node, it is not in ``torch_executed_ops``): the validators
    decide as they would while partitioning, so a guard that moves a node off TensorRT moves it off here too."""
    registry = converter_registry()  # imports Torch-TensorRT through the guards where nothing has yet
    from torch_tensorrt.dynamo.partitioning._global_partitioner import TorchTensorRTOperatorSupport

    executed = getattr(settings if settings is not None else registry.compilation_settings, "torch_executed_ops", None)
    support = TorchTensorRTOperatorSupport(torch_executed_ops=executed or set())
    modules = dict(module.named_modules())
    for node in module.graph.nodes:
        if node.op == "call_function" and support.is_node_supported(modules, node):
            yield UNPARTITIONED, node


def _located(module: Any, settings: Any) -> Iterator[Located]:
    """Where to look, decided (and what cannot be seen into refused) before anything is read."""
    import torch

    named = _named_modules(module)
    module = module_of(module)
    blocks = _acc_blocks(named)
    if blocks or any(n.rsplit(".", 1)[-1].startswith((ACC_PREFIX, GPU_PREFIX)) for n, _ in named):
        return _in_blocks(blocks)
    if isinstance(module, torch.fx.GraphModule):
        return _offered(module, settings)
    raise TypeError(f"unservable_placements: cannot see into a {type(module).__name__} (no fx graph, no "
                    f"partitions): {_INSTEAD}")


def _rejecting(node: Any, rules: list[Rule], settings: Any) -> Rule | None:
    name = target_name_of(getattr(node, "target", None))
    for rule in rules:
        if rule.rejects(node, name, settings):
            return rule
    return None


def _judged(located: Iterator[Located], settings: Any) -> list[UnservablePlacement]:
    decision = guards.capability_decision(settings)
    rules = [r for r in RULES if decision.targets_capability(r.capability)]
    if not rules:
        return []
    found = []
    for block, node in located:
        rule = _rejecting(node, rules, settings)
        if rule is not None:
            found.append(UnservablePlacement(block, node.name, target_name_of(node.target), rule.name))
    return found


def unservable_placements(module: Any, settings: Any = None) -> list[UnservablePlacement]:
    """Every ``call_function`` node placed on TensorRT (in ``module``'s ``_run_on_acc*`` blocks) or, for an
    unpartitioned graph (``exported.module()``, the lowered graph), every one Torch-TensorRT would offer to it
    (block :data:`UNPARTITIONED`), that a rule forbids on the declared targets
    (``settings.target_compute_capabilities`` > declared > ``TRTCAP_TARGET_SM`` > host device), in graph order.
    Empty off Turing, with the standard backend, or when nothing forbidden is there. A module it cannot see into
    (compiled TensorRT blocks, an nn.Module that is neither partitioned nor a graph) is a ``TypeError``, never a
    pass."""
    return _judged(_located(module, settings), settings)


def unservable_in_partition(module: Any, settings: Any = None) -> list[UnservablePlacement]:
    """:func:`unservable_placements` of a partitioner's result, read as one: a result without blocks (no run of
    supported nodes reached ``min_block_size``) put nothing on TensorRT, whatever its graph holds."""
    return _judged(_in_blocks(_acc_blocks(_named_modules(module))), settings)


def describe_placements(placements: list[UnservablePlacement]) -> str:
    return "\n".join(f"  {p.describe()}" for p in placements)


def assert_servable_placements(module: Any, settings: Any = None) -> None:
    """Fail, listing each unservable placement and the capability decision, when :func:`unservable_placements`
    finds any."""
    found = unservable_placements(module, settings)
    if found:
        decision = guards.capability_decision(settings)
        placed = ("that Torch-TensorRT would offer to TensorRT (the graph is not partitioned)"
                  if found[0].block == UNPARTITIONED else "placed on TensorRT")
        raise AssertionError(
            f"{len(found)} node(s) {placed} that the declared targets cannot serve:\n"
            f"{describe_placements(found)}\n"
            f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"
        )


# --- --trtcap-audit: every partition of the run, reported per test --------------------------------------------


PARTITIONING = "torch_tensorrt.dynamo.partitioning"
ENTRY_POINTS = ("fast_partition", "global_partition", "hierarchical_adjacency_partition")
OUTSIDE = "(outside tests)"
_FOUND = "trtcap_unservable"
_AUDITED = "trtcap_audited"
#: The layer audit's findings of a test (a list of lines) and the [networks, engines] it read, on its teardown report;
#: the recorder of ``trtcap sweep`` reads the first.
LAYER_FINDINGS = "trtcap_layer_findings"
LAYERS_READ = "trtcap_layers_read"


class TrtcapAuditError(Exception):
    """A test put nodes on TensorRT that the declared targets cannot serve (``--trtcap-audit --trtcap-strict``)."""


class AuditSession:
    """Wraps the partitioners while the session runs; collects findings per test from the test reports."""

    def __init__(self, strict: bool, placements: bool = True, layers: bool = False) -> None:
        self.strict = strict
        self.placements = placements  # --trtcap-audit
        self.layers: Any = None  # layer_audit.LayerAudit under --trtcap-audit-layers
        if layers:
            from .layer_audit import LayerAudit

            self.layers = LayerAudit(lambda: self.current or OUTSIDE)
        self.layer_found: dict[str, list[str]] = {}  # from reports
        self.layers_read = [0, 0]  # networks, engines: from reports
        self.current: str | None = None  # node id of the test running in this process
        self.pending: dict[str, list[str]] = {}  # findings of this process, not yet attached to a report
        self.audited: dict[str, int] = {}  # partitions audited, per test, in this process
        self.found: dict[str, list[str]] = {}  # from reports: right under xdist too
        self.partitions = 0  # from reports
        self.properties = OwnProperties()  # what this plugin attached to the reports
        self._restore: list[tuple[Any, str, Any]] = []

    # --- wrapping -----------------------------------------------------------------------------------------

    def activate(self) -> None:
        """Wrap the entry points (idempotent); called once torch_tensorrt has been imported."""
        if self.layers is not None:
            self.layers.activate()
        if self._restore:
            return
        module = importlib.import_module(PARTITIONING)
        for name in ENTRY_POINTS:
            original = getattr(module, name, None)
            if callable(original):
                setattr(module, name, self._wrap(original))
                self._restore.append((module, name, original))

    def deactivate(self) -> None:
        """Put the original entry points back (in reverse order, so nested sessions unwind); an entry point someone
        replaced after us is theirs to restore, and is left alone."""
        if self.layers is not None:
            self.layers.deactivate()
        while self._restore:
            module, name, original = self._restore.pop()
            if getattr(getattr(module, name, None), "__trtcap_audited__", None) is original:
                setattr(module, name, original)

    def _wrap(self, original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def audited(*args: Any, **kwargs: Any) -> Any:
            result = original(*args, **kwargs)
            self.record(result[0] if isinstance(result, tuple) and result else result)
            return result

        audited.__trtcap_audited__ = original  # type: ignore[attr-defined]
        return audited

    def record(self, module: Any) -> None:
        """Audit one partitioned module; never breaks the partitioner's caller."""
        key = self.current or OUTSIDE
        # the settings the partitioner's validators were given (``set_compilation_settings``): a rule may depend on
        # them (``use_fp32_acc`` runs FP16 GEMMs as FP32), and the partitioners take none of their own
        settings = getattr(loaded_converter_registry(), "compilation_settings", None)
        if self.layers is not None:  # --trtcap-audit-layers: each TensorRT block's network, built from the partition
            self.layers.partition(module, settings)
        if not self.placements:
            return
        try:
            found = [p.describe() for p in unservable_in_partition(module, settings)]
        except Exception as exc:  # pragma: no cover - the rules are total; this is the last line of defence
            found = [f"audit failed: {type(exc).__name__}: {exc}"]
        self.audited[key] = self.audited.get(key, 0) + 1
        if found:
            self.pending.setdefault(key, []).extend(found)

    # --- hooks --------------------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.current = item.nodeid
        try:
            return (yield)
        finally:
            self.current = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """Attach the test's findings to its teardown report; under ``--trtcap-strict`` they error the test."""
        found = self.pending.pop(item.nodeid, [])
        self.properties.append(item, _AUDITED, self.audited.pop(item.nodeid, 0))
        if found:
            self.properties.append(item, _FOUND, found)
        layer_found: list[str] = []
        if self.layers is not None:
            layer_found, read = self.layers.take(item.nodeid)
            self.properties.append(item, LAYERS_READ, read)
            if layer_found:
                self.properties.append(item, LAYER_FINDINGS, layer_found)
        result = yield
        if found and self.strict:
            raise TrtcapAuditError(
                f"trtcap: {item.nodeid} placed {len(found)} node(s) on TensorRT that the declared targets cannot "
                "serve (--trtcap-audit, --trtcap-strict):\n" + "\n".join(f"  {line}" for line in found)
            )
        if layer_found and self.strict:
            raise TrtcapAuditError(
                f"trtcap: {item.nodeid} gave TensorRT {len(layer_found)} layer(s) that the declared targets cannot "
                "serve (--trtcap-audit-layers, --trtcap-strict):\n" + "\n".join(f"  {line}" for line in layer_found)
            )
        return result

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        for key, value in self.properties.read(report, _FOUND, _AUDITED, LAYER_FINDINGS, LAYERS_READ):
            if key == _FOUND:
                self.found.setdefault(report.nodeid, []).extend(value)
            elif key == _AUDITED:
                self.partitions += value
            elif key == LAYER_FINDINGS:
                self.layer_found.setdefault(report.nodeid, []).extend(value)
            elif key == LAYERS_READ:
                self.layers_read = [self.layers_read[0] + value[0], self.layers_read[1] + value[1]]

    # --- report -------------------------------------------------------------------------------------------

    def summary_lines(self) -> list[str]:
        lines = self._placement_lines() if self.placements else []
        if self.layers is not None:
            from .layer_audit import summary_lines

            found = dict(self.layer_found)
            networks, engines = self.layers_read
            for key, more in self.layers.pending.items():  # networks built outside any test
                found.setdefault(key, []).extend(more)
            for read in self.layers.read.values():
                networks, engines = networks + read[0], engines + read[1]
            lines.extend(summary_lines(found, networks, engines))
        return lines

    def _placement_lines(self) -> list[str]:
        found = dict(self.found)
        for key, lines in self.pending.items():  # partitions made outside any test (module level, session fixtures)
            found.setdefault(key, []).extend(lines)
        partitions = self.partitions + sum(self.audited.values())
        if not found:
            return [f"placement audit: {partitions} partition(s) audited; no unservable placements"]
        total = sum(len(lines) for lines in found.values())
        out = [f"placement audit: {partitions} partition(s) audited; {total} unservable placement(s) in "
               f"{len(found)} test(s)"]
        for nodeid, lines in found.items():
            out.append(f"  {nodeid}")
            out.extend(f"    {line}" for line in lines)
        return out


def start(config: pytest.Config, strict: bool, placements: bool = True, layers: bool = False) -> AuditSession:
    """Register the audit for this session (activated when torch_tensorrt is imported): the placement audit
    (``--trtcap-audit``), the layer audit (``--trtcap-audit-layers``) or both."""
    session = AuditSession(strict, placements, layers)
    config.pluginmanager.register(session, "trtcap-audit")
    return session
