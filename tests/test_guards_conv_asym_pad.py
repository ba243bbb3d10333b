"""The fused asymmetric-pad convolution: Torch-TensorRT 2.14's post-lowering pass ``fuse_pad_into_convolution``
turns ``constant_pad_nd -> convolution`` into ``tensorrt.conv_asym_pad.default``, which no ``aten.convolution``
guard sees. A causal 3D convolution (a video model padding itself) must still fall back to PyTorch on Turing.

Real path: ``torch.export`` -> Torch-TensorRT's decompositions and ``post_lowering`` -> ``fast_partition``.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
import trt_models as tm

import trtcap_guards as guards

pytestmark = pytest.mark.usefixtures("tt")

ASYM = "tensorrt.conv_asym_pad.default"
CONV = "aten.convolution.default"
RELU = "aten.relu.default"


class PadConv(nn.Module):
    """Causal padding (two frames before, none after, in time) then a convolution and a ReLU."""

    def __init__(self, dims: int) -> None:
        super().__init__()
        self.dims = dims
        self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(2, 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = (1, 1, 2, 0) if self.dims == 2 else (1, 1, 1, 1, 2, 0)
        return torch.relu(self.conv(F.pad(x, pad)))


def model_and_input(dims: int):
    shape = (1, 2, 5, 5) if dims == 2 else (1, 2, 4, 5, 5)
    return tm.seeded(PadConv, dims), tm.inputs_for([shape], seed=3)


def pad_conv_graph(dims: int) -> torch.fx.GraphModule:
    return tm.lowered(("pad_conv", dims), lambda: model_and_input(dims))


def fired() -> int:
    return guards.fired().get(("conv3d", ASYM), 0)


@pytest.mark.parametrize("dims", [2, 3])
def test_post_lowering_fuses_the_pad_into_conv_asym_pad(dims):
    """The premise: Torch-TensorRT's own lowering leaves no aten.convolution for the guard to see."""
    calls = [str(n.target) for n in tm.call_function_nodes(pad_conv_graph(dims))]
    assert ASYM in calls and CONV not in calls


def test_fused_conv3d_at_turing_falls_back_to_pytorch(targets, guarded):
    targets("7.5")
    before = fired()
    model, (x,) = model_and_input(3)
    pm = tm.partition(pad_conv_graph(3))
    where = tm.placement(pm)
    assert where["gpu"] == [ASYM]
    assert where["acc"] == [RELU]
    assert fired() - before == 1
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x), rtol=0, atol=0)


def test_fused_conv3d_at_turing_without_guards_lands_on_tensorrt(targets):
    """Control: stock Torch-TensorRT 2.14 puts the fused 3D convolution on TensorRT-RTX at 7.5."""
    targets("7.5")
    assert not guards.is_installed()
    assert tm.placement(tm.partition(pad_conv_graph(3)))["acc"] == [ASYM, RELU]


def test_fused_conv3d_at_ada_stays_on_tensorrt(targets, guarded):
    targets("8.9")
    before = fired()
    assert tm.placement(tm.partition(pad_conv_graph(3))) == {"acc": [ASYM, RELU], "gpu": [], "inline": []}
    assert fired() == before


def test_fused_conv2d_at_turing_stays_on_tensorrt(targets, guarded):
    targets("7.5")
    before = fired()
    assert tm.placement(tm.partition(pad_conv_graph(2))) == {"acc": [ASYM, RELU], "gpu": [], "inline": []}
    assert fired() == before


def test_neutralizing_the_fused_target_puts_it_back_on_tensorrt(targets, guarded):
    targets("7.5")
    with guards.neutralize(ASYM):
        assert tm.placement(tm.partition(pad_conv_graph(3)))["acc"] == [ASYM, RELU]


def test_the_fused_target_is_one_entry_of_the_conv3d_rule():
    rule = next(r for r in guards.RULES if r.name == "conv3d")
    assert ASYM in rule.targets and CONV in rule.targets
    assert guards.rules_for(ASYM) == (rule,) + tuple(r for r in guards.RULES if "*" in r.targets)


def test_validator_on_the_real_fused_nodes(targets):
    targets("7.5")
    (node3,) = tm.nodes_with_target(pad_conv_graph(3), ASYM)
    (node2,) = tm.nodes_with_target(pad_conv_graph(2), ASYM)
    assert guards.convolution_capability_validator(node3) is False
    assert guards.convolution_capability_validator(node2) is True
    with guards.declare_targets("8.9"):
        assert guards.convolution_capability_validator(node3) is True
