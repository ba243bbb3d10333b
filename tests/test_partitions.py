"""Partition counts keyed off the one predicate (``pytest_trtcap.partitions``): the expectation chosen for the
declared targets, block counts and descriptions of a partitioned module, and the failure that lists the blocks.
Models go through the real export, lowering and ``fast_partition``; the fixture and helpers inside a pytest
session are in test_fixtures.py."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards
from pytest_trtcap.partitions import (
    PartitionCounts,
    assert_partition_counts,
    count_partitions,
    describe_partitions,
    expected_partition_counts,
)

pytestmark = pytest.mark.usefixtures("tt")


# --- the expectation for the declared targets ---------------------------------------------------------------


@pytest.mark.parametrize("declared, chosen", [("7.5", (1, 2)), ("8.9", (1, 0)), ("8.9,7.5", (1, 2)), ("12.0", (1, 0))])
def test_turing_counts_where_turing_is_a_target(declared, chosen, targets):
    targets(declared)
    counts = expected_partition_counts((1, 0), turing=(1, 2))
    assert counts == chosen and isinstance(counts, PartitionCounts)


@pytest.mark.parametrize("declared", ["8.9", "12.0"])
def test_default_alone_where_turing_is_no_target(declared, targets):
    targets(declared)
    assert expected_partition_counts((3, 1)) == PartitionCounts(acc=3, gpu=1)


@pytest.mark.parametrize("declared", ["7.5", "8.9,7.5"])
def test_default_alone_at_a_turing_target_is_refused_asking_for_turing_counts(declared, targets):
    """A forgotten ``turing=`` must not quietly mean "the same as default" where Turing is a target."""
    targets(declared, origin="ci matrix")
    with pytest.raises(ValueError) as info:
        expected_partition_counts((3, 1))
    message = str(info.value)
    assert message.startswith("expected_partition_counts: no turing= counts, and the targets include Turing ")
    assert f"(targets {declared} from ci matrix)" in message
    assert "turing=(3, 1)" in message  # says how to state that the default holds on Turing too


def test_turing_counts_equal_to_the_default_are_accepted_when_said(targets):
    targets("7.5")
    assert expected_partition_counts((3, 1), turing=(3, 1)) == (3, 1)


def test_settings_targets_outrank_the_declaration(targets):
    targets("8.9")
    settings = SimpleNamespace(target_compute_capabilities=[(7, 5)])
    assert expected_partition_counts((1, 0), (1, 2), settings=settings) == (1, 2)


@pytest.mark.parametrize("declared", ["7.5", "8.9"])
@pytest.mark.parametrize("default, turing, named", [
    ((1, 0), (1, -1), "turing: expected (acc, gpu) non-negative integers, got (1, -1)"),
    ((1, 0), (True, 2), "turing: expected (acc, gpu) non-negative integers, got (True, 2)"),
    ("10", None, "default: expected (acc, gpu) non-negative integers, got '10'"),
    ([1, 0], None, "default: expected (acc, gpu) non-negative integers, got [1, 0]"),  # a tuple, as documented
    ((1, 0, 0), (1, 2), "default: expected (acc, gpu) non-negative integers, got (1, 0, 0)"),
])
def test_bad_counts_are_refused_on_every_target(declared, default, turing, named, targets):
    targets(declared)
    with pytest.raises(ValueError) as info:
        expected_partition_counts(default, turing)
    assert str(info.value) == named


# --- per-release overrides --------------------------------------------------------------------------------------


def _installed() -> str:
    """The installed Torch-TensorRT's version, read from the distribution's metadata (not by the code under test)."""
    from importlib.metadata import version

    return version("torch-tensorrt-rtx")


@pytest.mark.parametrize("declared", ["7.5", "8.9"])
def test_a_release_entry_that_admits_the_installed_release_replaces_the_counts_it_names(declared, targets):
    targets(declared)
    here = _installed()
    releases = {f"<{here}": {"turing": (9, 9), "default": (9, 9)}, f">={here}": {"turing": (2, 1)}}
    chosen = expected_partition_counts((1, 0), turing=(1, 1), releases=releases)
    assert chosen == ((2, 1) if declared == "7.5" else (1, 0))


def test_no_release_entry_admitting_the_installed_release_leaves_the_counts_alone(targets):
    targets("7.5")
    releases = {f"<{_installed()}": {"turing": (2, 1)}, ">=99": {"default": (5, 5)}}
    assert expected_partition_counts((1, 0), turing=(1, 1), releases=releases) == (1, 1)


def test_the_first_release_entry_that_admits_the_installed_release_wins(targets):
    targets("8.9")
    here = _installed()
    releases = {f"=={here}": {"default": (3, 0)}, f">={here}": {"default": (4, 0)}}
    assert expected_partition_counts((1, 0), releases=releases) == (3, 0)


def test_a_release_entry_may_give_turing_counts_the_default_call_did_not(targets):
    targets("7.5")
    assert expected_partition_counts((1, 0), releases={f">={_installed()}": {"turing": (2, 1)}}) == (2, 1)


@pytest.mark.parametrize("releases, named", [
    ([("<2.14", {"turing": (2, 1)})], "releases: expected {version specifier: {'default'|'turing': (acc, gpu)}}, "
                                      "got [('<2.14', {'turing': (2, 1)})]"),
    ({"2.14": {"turing": (2, 1)}}, "releases: '2.14' is not a version specifier (e.g. '<2.14')"),
    ({3: {"turing": (2, 1)}}, "releases: 3 is not a version specifier (e.g. '<2.14')"),
    ({"<2.14": (2, 1)}, "releases['<2.14']: expected a mapping with 'default' and/or 'turing', got (2, 1)"),
    ({"<2.14": {}}, "releases['<2.14']: expected a mapping with 'default' and/or 'turing', got {}"),
    ({"<2.14": {"ampere": (2, 1)}},
     "releases['<2.14']: expected a mapping with 'default' and/or 'turing', got {'ampere': (2, 1)}"),
    ({"<99": {"turing": (2, -1)}}, "releases['<99']['turing']: expected (acc, gpu) non-negative integers, got (2, -1)"),
    ({">=99": {"turing": (2, -1)}}, "releases['>=99']['turing']: expected (acc, gpu) non-negative integers, "
                                   "got (2, -1)"),
])
def test_bad_release_entries_are_refused_whichever_release_is_installed(releases, named, targets):
    targets("7.5")
    with pytest.raises(ValueError) as info:
        expected_partition_counts((1, 0), turing=(1, 1), releases=releases)
    assert str(info.value) == named


# --- counting and describing blocks -------------------------------------------------------------------------------


def test_the_fp32_mlp_at_turing_is_one_trt_block_between_two_pytorch_blocks(targets, guarded):
    targets("7.5")
    pm = tm.partition(tm.lowered_mlp())
    assert count_partitions(pm) == PartitionCounts(acc=1, gpu=2)
    assert describe_partitions(pm).splitlines() == [
        "  _run_on_gpu_0: aten.linear.default",
        "  _run_on_acc_1: aten.relu.default",
        "  _run_on_gpu_2: aten.linear.default",
    ]
    assert_partition_counts(pm, (1, 2))


def test_blocks_without_a_graph_are_counted_and_said_to_have_no_nodes():
    """An engine module (no fx graph) in place of a block, as after compilation; other children are not blocks."""
    parent = torch.nn.Module()
    parent.add_module("_run_on_acc_0", torch.nn.Identity())
    parent.add_module("_run_on_gpu_1", torch.fx.symbolic_trace(torch.nn.Identity()))
    parent.add_module("head", torch.nn.Linear(2, 2))
    assert count_partitions(parent) == (1, 1)
    assert describe_partitions(parent) == (
        "  _run_on_acc_0: (no call_function nodes)\n  _run_on_gpu_1: (no call_function nodes)"
    )


def test_a_failure_names_both_counts_the_blocks_and_the_decision(targets, guarded):
    targets("7.5", origin="ci matrix")
    pm = tm.partition(tm.lowered_mlp())
    with pytest.raises(AssertionError) as info:
        assert_partition_counts(pm, PartitionCounts(acc=1, gpu=0))
    lines = str(info.value).splitlines()
    assert lines[0] == "partition counts (1, 2) != expected (1, 0) (acc, gpu)"
    assert lines[1:5] == ["blocks:", "  _run_on_gpu_0: aten.linear.default", "  _run_on_acc_1: aten.relu.default",
                          "  _run_on_gpu_2: aten.linear.default"]
    assert lines[5].startswith("trtcap: targets Turing on TensorRT-RTX = True: ")
    assert lines[5].endswith("(targets 7.5 from ci matrix)")


def test_a_failure_follows_the_settings_given(targets):
    targets("7.5")
    settings = SimpleNamespace(target_compute_capabilities=[(8, 9)])
    with pytest.raises(AssertionError, match=r"trtcap: targets Turing on TensorRT-RTX = False: ") as info:
        assert_partition_counts(torch.nn.Linear(2, 2), (0, 1), settings=settings)
    assert "partition counts (0, 0) != expected (0, 1)" in str(info.value)
    assert "  (no partitions)" in str(info.value)


def test_the_decision_line_keeps_a_declared_origin_on_it(targets):
    """The origin is the suite's text: its line break must not split the decision line, nor its ESC reach the
    terminal through pytest's report of the assertion."""
    targets("7.5", origin="ci\n\x1b[2Jforged")
    with pytest.raises(AssertionError) as info:
        assert_partition_counts(torch.nn.Module(), (1, 1))
    last = str(info.value).splitlines()[-1]
    assert last.startswith("trtcap: targets Turing on TensorRT-RTX = True: ")
    assert last.endswith("(targets 7.5 from ci\\n\\x1b[2Jforged)")


# --- the helpers on the recipe the suites in test_fixtures.py run, here in this process ----------------------


@pytest.fixture(scope="module")
def recipe() -> Any:
    """``plugin_recipe``: the FP32 MLP the fixture suites in test_fixtures.py partition, here in this process."""
    import plugin_recipe

    return plugin_recipe


def test_count_partitions_at_7_5_and_8_9(recipe: Any) -> None:
    with guards.declare_targets("7.5", origin="test"), guards.installed():
        pm, model, x = recipe.partition()
        names = [n for n, _ in pm.named_children() if n.startswith("_run_on")]
        assert names == ["_run_on_gpu_0", "_run_on_acc_1", "_run_on_gpu_2"]
        assert count_partitions(pm) == PartitionCounts(acc=1, gpu=2)
        assert torch.allclose(pm(x), model(x))
        fp16, _, _ = recipe.partition(torch.float16)
        assert count_partitions(fp16) == (1, 0)  # FP16 GEMMs stay on TensorRT at 7.5
    with guards.declare_targets("8.9", origin="test"), guards.installed():
        pm, _, _ = recipe.partition()
        assert [n for n, _ in pm.named_children() if n.startswith("_run_on")] == ["_run_on_acc_0"]
        assert count_partitions(pm) == PartitionCounts(acc=1, gpu=0)


def test_assert_partition_counts_passes_and_its_failure_lists_blocks_and_decision(recipe: Any) -> None:
    with guards.declare_targets("7.5", origin="test"), guards.installed():
        pm, _, _ = recipe.partition()
        assert_partition_counts(pm, (1, 2))
        assert_partition_counts(pm, PartitionCounts(acc=1, gpu=2))
        with pytest.raises(AssertionError) as failure:
            assert_partition_counts(pm, (1, 0))
    assert str(failure.value) == (
        "partition counts (1, 2) != expected (1, 0) (acc, gpu)\n"
        "blocks:\n"
        "  _run_on_gpu_0: aten.linear.default\n"
        "  _run_on_acc_1: aten.relu.default\n"
        "  _run_on_gpu_2: aten.linear.default\n"
        "trtcap: targets Turing on TensorRT-RTX = True: TensorRT-RTX targets SM 7.5 (targets 7.5 from test)"
    )

    with guards.declare_targets("8.9", origin="ci"), guards.installed():
        pm, _, _ = recipe.partition()
        with pytest.raises(AssertionError) as failure:
            assert_partition_counts(pm, (1, 2))
    message = str(failure.value)
    assert message.startswith("partition counts (1, 0) != expected (1, 2) (acc, gpu)\nblocks:\n")
    assert "  _run_on_acc_0: aten.linear.default, aten.relu.default, aten.linear.default\n" in message
    assert message.endswith(
        "trtcap: targets Turing on TensorRT-RTX = False: SM 7.5 is not among the targets (targets 8.9 from ci)"
    )


def test_partition_helpers_on_an_unpartitioned_module_and_bad_expectations(recipe: Any) -> None:
    gm, _, _ = recipe.lowered()
    assert count_partitions(gm) == (0, 0)
    assert describe_partitions(gm) == "  (no partitions)"
    for bad in [(1,), (1, 2, 3), (1, -1), (1.0, 2), (True, 0), "12", None]:
        with pytest.raises(ValueError, match=r"expected: expected \(acc, gpu\) non-negative integers"):
            assert_partition_counts(gm, bad)


# --- the actual half: pytest_trtcap.partition -------------------------------------------------------------------


def _mlp(dtype: Any = torch.float32) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dtype)


def _blocks(module: Any) -> list[str]:
    return [name for name, _ in module.named_children() if name.startswith("_run_on")]


@pytest.mark.parametrize("declared, names, expected", [
    ("7.5", ["_run_on_gpu_0", "_run_on_acc_1", "_run_on_gpu_2"], (1, 2)),  # both FP32 linears kept off TensorRT
    ("8.9", ["_run_on_acc_0"], (1, 0)),
])
def test_partition_exports_lowers_and_splits_under_the_declared_targets(declared, names, expected, targets, guarded):
    from pytest_trtcap import Partitioned, partition

    targets(declared)
    model, x = _mlp(), torch.randn(2, 16)
    result = partition(model, x)
    assert isinstance(result, Partitioned)
    module, counts = result
    assert _blocks(module) == names
    assert counts == expected
    assert torch.allclose(module(x), model(x), atol=1e-6)  # the split module still computes the model
    assert_partition_counts(result, counts)  # the helpers take the result as they take the module
    assert describe_partitions(result) == describe_partitions(module)


def test_partition_passes_torch_executed_ops_through(targets, guarded):
    from pytest_trtcap import partition

    targets("8.9")
    module, counts = partition(_mlp(), torch.randn(2, 16), torch_executed_ops={torch.ops.aten.relu.default})
    assert _blocks(module) == ["_run_on_acc_0", "_run_on_gpu_1", "_run_on_acc_2"]
    assert counts == (2, 1)


def test_partition_passes_min_block_size_through(targets, guarded):
    """At 7.5 the ReLU between the two PyTorch linears is a block of one node: under a minimum of 2 it stays in
    PyTorch too, and nothing goes to TensorRT."""
    from pytest_trtcap import partition

    targets("7.5")
    assert partition(_mlp(), torch.randn(2, 16), min_block_size=2).counts.acc == 0


def test_the_global_partitioner_leaves_what_tensorrt_does_not_take_inline(targets, guarded):
    from pytest_trtcap import partition

    targets("7.5")
    module, counts = partition(_mlp(), torch.randn(2, 16), partitioner="global")
    assert _blocks(module) == ["_run_on_acc_0"] and counts == (1, 0)
    inline = [str(n.target) for n in module.graph.nodes if n.op == "call_function"]
    assert inline.count("aten.linear.default") == 2


def test_use_fast_partitioner_false_chooses_the_global_partitioner(targets, guarded):
    from pytest_trtcap import partition

    targets("7.5")
    assert partition(_mlp(), torch.randn(2, 16), use_fast_partitioner=False).counts == (1, 0)


def test_partition_takes_dynamic_shapes_and_the_result_runs_at_another_batch(targets, guarded):
    from pytest_trtcap import partition

    targets("7.5")
    model = _mlp()
    batch = torch.export.Dim("batch", min=2, max=64)
    module, counts = partition(model, torch.randn(2, 16), dynamic_shapes=({0: batch},))
    assert counts == (1, 2)
    x = torch.randn(9, 16)
    assert torch.allclose(module(x), model(x), atol=1e-6)


def test_partition_takes_an_exported_program_as_it_is(targets, guarded):
    from pytest_trtcap import partition

    targets("7.5")
    exported = torch.export.export(_mlp(torch.float16).eval(), (torch.randn(2, 16, dtype=torch.float16),))
    assert partition(exported).counts == (1, 0)  # FP16 GEMMs stay on TensorRT at 7.5


@pytest.mark.parametrize("settings, message", [
    ({"min_blok_size": 2}, "partition: min_blok_size=2 is not a CompilationSettings field of the installed "
                           "Torch-TensorRT (did you mean min_block_size?)"),
    ({"partitioner": "adjacency"}, "partition: partitioner='adjacency' is not one of fast, global, hierarchical"),
    ({"partitioner": "global", "use_fast_partitioner": True},
     "partition: partitioner='global' contradicts use_fast_partitioner=True; give one"),
])
def test_a_setting_partition_cannot_take_is_refused_by_name(settings, message, targets):
    from pytest_trtcap import partition

    targets("8.9")
    with pytest.raises((TypeError, ValueError)) as info:
        partition(_mlp(), torch.randn(2, 16), **settings)
    assert str(info.value) == message


FAILING_COUNT = '''
import logging
import torch
from pytest_trtcap import assert_partition_counts

def test_counts(partition):
    logging.getLogger("project").debug("the project's own debug line")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    assert_partition_counts(partition(model, torch.randn(2, 16)), (1, 2))
'''


def test_a_failing_count_ends_with_its_explanation_not_torchs_trace_records(pytester: pytest.Pytester):
    """pytest captures every non-propagating logger too, and torch's structured-trace logger (``torch.__trace``)
    logs at DEBUG whatever the level: 33 records of it stood between the explanation and the summary. They are
    not captured; the project's own records still are."""
    pytester.makepyfile(test_counts=FAILING_COUNT)
    result = pytester.runpytest("-p", "no:randomly", "--trt-target-sm", "7.5", "--trtcap-guards", "off",
                                "--log-level", "DEBUG")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "torch.__trace" not in out
    result.stdout.fnmatch_lines([
        "E           AssertionError: partition counts (1, 0) != expected (1, 2) (acc, gpu)",
        "*Captured log call*",
        "DEBUG    project:test_counts.py:6 the project's own debug line",
    ])


def test_the_hierarchical_partitioner_asks_no_validator_and_the_audit_says_so(targets, guarded):
    """Torch-TensorRT's hierarchical partitioner matches op names against its backends' lists and never runs a
    converter's validator, so the guards cannot move the FP32 linears off TensorRT there: the audit of its result
    names both."""
    from pytest_trtcap import partition, unservable_placements

    targets("7.5")
    result = partition(_mlp(), torch.randn(2, 16), partitioner="hierarchical")
    assert _blocks(result.module) == ["_run_on_acc_tensorrt_0"] and result.counts == (1, 0)
    found = unservable_placements(result)
    linear = ("_run_on_acc_tensorrt_0", "aten.linear.default", "fp32_gemm")
    assert [(p.block, p.op, p.rule) for p in found] == [linear, linear]


class _Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, *, scale: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) * scale


def test_partition_takes_keyword_inputs(targets, guarded):
    from pytest_trtcap import partition

    targets("8.9")
    model, x, scale = _Scaled(), torch.randn(2, 16), torch.randn(4)
    module, counts = partition(model, x, kwarg_inputs={"scale": scale})
    assert counts == (1, 0)
    assert torch.allclose(module(x, scale=scale), model(x, scale=scale), atol=1e-6)


def test_resource_partitioning_is_applied_when_the_settings_ask_for_it(targets, guarded):
    """As ``compile`` does: with a CPU memory budget too small for one engine of the whole model, the one TensorRT
    block is split into several; without the setting it stays one. Torch-TensorRT's budget counts from the process's
    resident memory, and assumes a build takes four times a block's weights: three times the weights above what the
    process holds leaves each engine less than the whole model."""
    import psutil

    from pytest_trtcap import partition

    targets("8.9")
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(6)])
    x = torch.randn(2, 1024)
    assert partition(model, x).counts == (1, 0)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    budget = psutil.Process().memory_info().rss + 3 * weights
    split = partition(model, x, enable_resource_partitioning=True, cpu_memory_budget=budget)
    assert split.counts.acc > 1 and split.counts.gpu == 0
    assert torch.allclose(split.module(x), model(x), atol=1e-5)
