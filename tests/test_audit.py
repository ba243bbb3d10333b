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


@pytest.mark.parametrize("module", [torch.nn.Linear(2, 2), torch.fx.symbolic_trace(torch.nn.ReLU())])
def test_a_module_without_acc_blocks_has_nothing_to_find(module, targets):
    targets("7.5")
    assert unservable_placements(module) == []


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
