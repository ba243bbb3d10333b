"""The placement audit: nodes Torch-TensorRT's partitioners put on TensorRT that the declared targets cannot serve,
judged from the nodes themselves (not the registry's validators). Real export, lowering and partitioners."""

from __future__ import annotations

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards
from pytest_trtcap import UnservablePlacement, assert_servable_placements, unservable_placements

pytestmark = pytest.mark.usefixtures("tt")

LINEAR = "aten.linear.default"
ASYM = "tensorrt.conv_asym_pad.default"
UNPARTITIONED = "(not partitioned)"  # the block a node of an unpartitioned graph is named by


def mlp_partitioned() -> torch.fx.GraphModule:
    return tm.partition(tm.lowered_mlp())


def test_guards_off_at_turing_lists_each_fp32_linear(targets):
    targets("7.5")
    assert unservable_placements(mlp_partitioned()) == [
        UnservablePlacement("_run_on_acc_0", "linear", LINEAR, "fp32_gemm"),
        UnservablePlacement("_run_on_acc_0", "linear_1", LINEAR, "fp32_gemm"),
    ]


def test_guards_on_at_turing_nothing(targets, guarded):
    targets("7.5")
    pm = mlp_partitioned()
    assert tm.placement(pm)["gpu"] == [LINEAR, LINEAR]  # the guards moved them: nothing left to find
    assert unservable_placements(pm) == []
    assert_servable_placements(pm)


def test_at_ada_nothing(targets):
    targets("8.9")
    assert unservable_placements(mlp_partitioned()) == []


def test_fp16_at_turing_nothing(targets):
    targets("7.5")
    assert unservable_placements(tm.partition(tm.lowered_mlp(torch.float16))) == []


def test_fp16_linears_under_use_fp32_acc_at_turing_are_listed_with_the_settings(targets):
    """``use_fp32_acc=True`` makes the converter build FP32 matrix multiplies from FP16 linears: unservable on
    Turing. Only the settings say so; without them the audit cannot know and lists nothing."""
    targets("7.5")
    settings = tm.compilation_settings(use_fp32_acc=True)
    pm = tm.partition(tm.lowered_mlp(torch.float16), settings)
    assert [(p.node, p.rule) for p in unservable_placements(pm, settings)] == [
        ("linear", "fp32_acc_gemm"), ("linear_1", "fp32_acc_gemm")]
    assert unservable_placements(pm) == []


def test_fp64_linears_at_turing_are_listed_as_fp32_gemms(targets):
    """TensorRT has no double: Torch-TensorRT hands FP64 GEMMs to TensorRT as FP32 ones."""
    targets("7.5")
    pm = tm.partition(tm.lowered_mlp(torch.float64))
    assert [(p.node, p.rule) for p in unservable_placements(pm)] == [("linear", "fp32_gemm"), ("linear_1", "fp32_gemm")]


def test_independent_of_the_validators(targets, guarded):
    """A guard switched off (or a target no validator knows) is still caught: the audit reads the node itself."""
    targets("7.5")
    with guards.neutralize(LINEAR):
        found = unservable_placements(mlp_partitioned())
    assert [(p.node, p.rule) for p in found] == [("linear", "fp32_gemm"), ("linear_1", "fp32_gemm")]


def test_the_fused_asymmetric_pad_conv3d_is_caught_without_guards(targets):
    targets("7.5")
    (found,) = unservable_placements(tm.partition(tm.pad_conv_graph(3)))
    assert (found.op, found.rule) == (ASYM, "conv3d")
    assert unservable_placements(tm.partition(tm.pad_conv_graph(2))) == []


def test_global_partition_blocks_are_audited_too(targets):
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    pm, _ = partitioning.global_partition(tm.lowered_mlp(), min_block_size=1)
    assert [p.op for p in unservable_placements(pm)] == [LINEAR, LINEAR]


def test_hierarchical_partition_audits_only_the_tensorrt_backends_blocks(targets):
    """The hierarchical partitioner names each backend's blocks ``_run_on_acc_<backend>_<n>``: a Linear it gives to
    another backend (inductor) is not on TensorRT; one it gives to TensorRT is."""
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    ops = {n.target for n in tm.lowered_mlp().graph.nodes if n.op == "call_function"}
    linear = {t for t in ops if str(t) == LINEAR}
    for trt, other in ((ops - linear, linear), (ops, set())):
        pm, _ = partitioning.hierarchical_adjacency_partition(
            tm.lowered_mlp(), min_block_size=1, backend_support_map={"tensorrt": trt, "inductor": other},
            backend_priority=["tensorrt", "inductor"])
        found = [(p.block.rsplit("_", 1)[0], p.op) for p in unservable_placements(pm)]
        assert found == ([] if other else [("_run_on_acc_tensorrt", LINEAR)] * 2), [n for n, _ in pm.named_children()]


def test_assert_servable_placements_lists_them_with_the_decision(targets):
    targets("7.5")
    with pytest.raises(AssertionError) as info:
        assert_servable_placements(mlp_partitioned())
    assert str(info.value).splitlines() == [
        "2 node(s) placed on TensorRT that the declared targets cannot serve:",
        "  _run_on_acc_0: linear (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        "  _run_on_acc_0: linear_1 (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        "trtcap: targets Turing on TensorRT-RTX = True: " + guards.capability_decision().reason,
    ]


def test_a_traced_graph_without_an_unservable_node_has_nothing_to_find(targets):
    targets("7.5")
    assert unservable_placements(torch.fx.symbolic_trace(torch.nn.ReLU())) == []


def test_a_partition_that_put_nothing_on_tensorrt_has_nothing_to_find(targets, guarded):
    targets("7.5")
    pm = tm.partition(tm.gemm_graph("mm"))
    assert tm.children(pm) == ["_run_on_gpu_0"]
    assert unservable_placements(pm) == []


@pytest.mark.parametrize("graph", ["lowered", "exported"])
def test_an_unpartitioned_graph_lists_each_node_torch_tensorrt_would_offer_to_tensorrt(graph, targets):
    """``exported.module()`` and the lowered graph hold every node: each one Torch-TensorRT's partitioners would
    offer to TensorRT (a converter accepts it, it is not in ``torch_executed_ops``) is judged as a placed one."""
    targets("7.5")
    gm = tm.lowered_mlp() if graph == "lowered" else tm.export(*tm.mlp()).module()
    assert unservable_placements(gm) == [
        UnservablePlacement(UNPARTITIONED, "linear", LINEAR, "fp32_gemm"),
        UnservablePlacement(UNPARTITIONED, "linear_1", LINEAR, "fp32_gemm"),
    ]


def test_an_unpartitioned_graph_finds_what_its_partition_finds(targets, guarded):
    """With the guards on, no converter accepts an FP32 linear at 7.5: nothing is offered, as the partition shows;
    with the guard neutralized both linears are offered again, and both audits list them."""
    targets("7.5")
    assert unservable_placements(tm.lowered_mlp()) == unservable_placements(mlp_partitioned()) == []
    with guards.neutralize(LINEAR):
        unpartitioned = [(p.node, p.rule) for p in unservable_placements(tm.lowered_mlp())]
        partitioned = [(p.node, p.rule) for p in unservable_placements(mlp_partitioned())]
    assert unpartitioned == partitioned == [("linear", "fp32_gemm"), ("linear_1", "fp32_gemm")]


def test_an_unpartitioned_graph_leaves_out_the_torch_executed_ops(targets):
    targets("7.5")
    settings = tm.compilation_settings(torch_executed_ops={torch.ops.aten.linear.default})
    assert unservable_placements(tm.lowered_mlp(), settings) == []
    assert len(unservable_placements(tm.lowered_mlp(), tm.compilation_settings())) == 2


def test_assert_servable_placements_on_an_unpartitioned_graph_says_the_nodes_would_be_offered(targets):
    targets("7.5")
    with pytest.raises(AssertionError) as info:
        assert_servable_placements(tm.lowered_mlp())
    assert str(info.value).splitlines()[:3] == [
        "2 node(s) that Torch-TensorRT would offer to TensorRT (the graph is not partitioned) that the declared "
        "targets cannot serve:",
        f"  {UNPARTITIONED}: linear (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
        f"  {UNPARTITIONED}: linear_1 (aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5",
    ]


@pytest.mark.parametrize("check", [unservable_placements, assert_servable_placements])
def test_a_compiled_module_is_refused_naming_what_to_pass_instead(check, targets):
    """What ``torch_tensorrt.dynamo.compile`` returns: its TensorRT blocks hold engines, not graphs, so nothing in
    it says what was placed there (see :func:`trt_models.compiled_blocks`)."""
    targets("7.5")
    compiled = tm.compiled_blocks(mlp_partitioned())
    with pytest.raises(TypeError) as info:
        check(compiled)
    assert str(info.value) == (
        "unservable_placements: cannot see into _run_on_acc_0, a TorchTensorRTModule (a compiled TensorRT engine, "
        "no graph): pass the module a Torch-TensorRT partitioner returned (before compile), or run the suite with "
        "--trtcap-audit")


def test_a_compiled_module_nested_in_a_model_is_refused_by_its_path(targets):
    targets("7.5")
    holder = torch.nn.Sequential(tm.compiled_blocks(mlp_partitioned()))
    with pytest.raises(TypeError, match=r"cannot see into 0\._run_on_acc_0, a TorchTensorRTModule"):
        unservable_placements(holder)


@pytest.mark.parametrize("module", [torch.nn.Linear(2, 2), torch.nn.Sequential(torch.nn.ReLU())],
                         ids=["Linear", "Sequential"])
def test_a_module_that_is_neither_graph_nor_partition_is_refused(module, targets):
    targets("7.5")
    with pytest.raises(TypeError) as info:
        assert_servable_placements(module)
    assert str(info.value).startswith(
        f"unservable_placements: cannot see into a {type(module).__name__} (no fx graph, no partitions): pass "
        "the module a Torch-TensorRT partitioner returned, the exported or lowered GraphModule, or run the suite "
        "with --trtcap-audit")


@pytest.mark.parametrize("value", [object(), None, "abc", 42])
def test_what_is_no_module_is_refused_not_passed(value, targets):
    targets("7.5")
    with pytest.raises(TypeError, match=r"unservable_placements: expected the torch\.nn\.Module a Torch-TensorRT"):
        unservable_placements(value)
    with pytest.raises(TypeError):
        assert_servable_placements(value)


def test_a_partitioners_tuple_left_unpacked_is_refused_with_a_hint(targets):
    """fast_partition returns (module, ...): forgetting to unpack it must not make the check pass."""
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    result = partitioning.fast_partition(tm.lowered_mlp(), min_block_size=1)
    assert isinstance(result, tuple)
    with pytest.raises(TypeError, match=r"got a tuple: unpack the partitioner's result"):
        assert_servable_placements(result)


def test_the_decision_line_keeps_a_declared_origin_on_it(targets):
    """The origin is the suite's text: its line break must not split the decision line, nor its ESC reach the
    terminal through pytest's report of the assertion."""
    targets("7.5", origin="ci\n\x1b[2Jforged")
    with pytest.raises(AssertionError) as info:
        assert_servable_placements(mlp_partitioned())
    last = str(info.value).splitlines()[-1]
    assert last.startswith("trtcap: targets Turing on TensorRT-RTX = True: ")
    assert last.endswith("(targets 7.5 from ci\\n\\x1b[2Jforged)")
