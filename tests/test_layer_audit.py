"""The layer audit: the layers TensorRT is given, judged by layer type and dtypes, not by the rules' node checks.
Partitioned modules: each block's network built by Torch-TensorRT's own interpreter (real export, lowering,
partitioners and converters, no engine build). Compiled modules: engine information as the engine inspector gives it
(the FP32 MLP engine recorded on an H100 in the shared notes, served through ``get_layer_info()``)."""

from __future__ import annotations

import json

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards
from pytest_trtcap import UnservableLayer, assert_servable_layers, unservable_layers, unservable_placements

pytestmark = pytest.mark.usefixtures("tt")

LINEAR = "aten.linear.default"
TANH = "aten.tanh.default"


def mlp_partitioned(dtype: torch.dtype = torch.float32, settings=None) -> torch.fx.GraphModule:
    return tm.partition(tm.lowered_mlp(dtype), settings)


MATMUL_OF_LINEAR = "[MATRIX_MULTIPLY]-[aten_ops.linear.default]-["  # the converter's name; the module path may follow


def test_fp32_linears_at_turing_are_fp32_matrix_multiply_layers(targets):
    targets("7.5")
    found = unservable_layers(mlp_partitioned())
    assert [f._replace(layer="") for f in found] == [
        UnservableLayer("_run_on_acc_0", "", LINEAR, "fp32_gemm", ("FLOAT", "FLOAT", "FLOAT"))] * 2
    assert [f.layer.startswith(MATMUL_OF_LINEAR) for f in found] == [True, True]
    assert [f.layer.rsplit("/", 1)[-1].lstrip("[") for f in found] == ["linear_matrix_multiply]",
                                                                       "linear_1_matrix_multiply]"]


def test_fp16_linears_at_turing_and_fp32_ones_at_ada_are_servable(targets):
    targets("7.5")
    assert unservable_layers(mlp_partitioned(torch.float16)) == []
    targets("8.9")
    assert unservable_layers(mlp_partitioned()) == []


def test_guards_on_at_turing_leave_no_fp32_matrix_multiply(targets, guarded):
    targets("7.5")
    assert unservable_layers(mlp_partitioned()) == []


@pytest.fixture
def tanh_with_a_hidden_matmul(registry_guard, tt):
    """A converter for ``aten.tanh`` that multiplies its input by an identity matrix before the tanh: a matrix multiply
    no rule can know of (what Torch-TensorRT's cdist converter did before a rule named it). Its layers are unnamed, as
    a converter that adds layers by hand leaves them."""
    import numpy as np
    import tensorrt as trt
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority, dynamo_tensorrt_converter

    @dynamo_tensorrt_converter(torch.ops.aten.tanh.default, priority=ConverterPriority.HIGH)
    def tanh_via_matmul(ctx, target, args, kwargs, name):
        x = args[0]
        eye = ctx.net.add_constant((x.shape[-1], x.shape[-1]), trt.Weights(np.eye(x.shape[-1], dtype=np.float32)))
        product = ctx.net.add_matrix_multiply(x, trt.MatrixOperation.NONE, eye.get_output(0), trt.MatrixOperation.NONE)
        return ctx.net.add_activation(product.get_output(0), trt.ActivationType.TANH).get_output(0)

    return tm.partition(tm.lower(tm.Fn(torch.tanh), tm.inputs_for([(4, 8)])))


def test_a_converter_that_hides_a_matmul_passes_the_placement_audit_but_not_the_layer_audit(
        tanh_with_a_hidden_matmul, targets, guarded):
    targets("7.5")
    pm = tanh_with_a_hidden_matmul
    assert [name for name, _ in pm.named_children()] == ["_run_on_acc_0"]
    assert unservable_placements(pm) == []
    (found,) = unservable_layers(pm)
    assert (found.block, found.op, found.kind, found.dtypes) == ("_run_on_acc_0", TANH, "fp32_gemm",
                                                                 ("FLOAT", "FLOAT", "FLOAT"))
    assert found.layer.endswith("[Matrix Multiply]")
    assert found.describe().endswith("-> fp32_gemm: FP32 GEMM on SM 7.5 [FLOAT, FLOAT, FLOAT]; no rule names this op")


def test_fp32_attention_is_one_attention_finding_and_fp16_attention_is_servable(targets):
    targets("7.5")
    (found,) = unservable_layers(tm.partition(tm.attention_graph()))
    assert (found.op, found.kind) == ("aten.scaled_dot_product_attention.default", "fp32_attention")
    assert "FLOAT" in found.dtypes
    assert unservable_layers(tm.partition(tm.attention_graph(torch.float16))) == []


def test_the_matrix_multiply_cdist_builds_is_found_in_fp16_too(targets):
    targets("7.5")
    (found,) = unservable_layers(tm.partition(tm.cdist_forward_graph(None, 30, torch.float16)))
    assert (found.op, found.kind, found.dtypes) == ("aten._cdist_forward.default", "cdist_matmul",
                                                    ("HALF", "HALF", "HALF"))
    assert found.layer == "[MATRIX_MULTIPLY]-[aten_ops._cdist_forward.default]-[/_cdist_forward_dot_product]"
    assert unservable_layers(tm.partition(tm.cdist_forward_graph(None, 5, torch.float16))) == []  # no matmul branch


def test_a_3d_convolution_is_found_and_a_2d_one_is_not(targets):
    targets("7.5")
    (found,) = unservable_layers(tm.partition(tm.conv_graph(3)))
    assert (found.op, found.kind) == ("aten.convolution.default", "conv3d")
    assert unservable_layers(tm.partition(tm.conv_graph(2))) == []


def test_the_fused_pad_convolution_is_named_by_its_own_op_not_the_layer_names_namespace(targets):
    """2.14's converter names the layer ``aten_ops.conv_asym_pad.default``; the op is ``tensorrt.conv_asym_pad``."""
    if not tm.fuses_pad_into_convolution():
        pytest.skip(f"Torch-TensorRT {tm.release()} keeps constant_pad_nd and convolution apart")
    targets("7.5")
    (found,) = unservable_layers(tm.partition(tm.pad_conv_graph(3)))
    assert (found.op, found.kind) == ("tensorrt.conv_asym_pad.default", "conv3d")
    assert found.layer == "[CONVOLUTION]-[aten_ops.conv_asym_pad.default]-[conv/conv_asym_pad_default]"


def test_bf16_layers_are_found(targets):
    targets("7.5")
    found = unservable_layers(mlp_partitioned(torch.bfloat16))
    assert found and {f.kind for f in found} == {"bf16"}
    assert all("BF16" in f.dtypes for f in found)


def test_use_fp32_acc_makes_fp16_linears_fp32_matrix_multiplies_in_the_network(targets):
    """The converter casts FP16 operands to FP32 under ``use_fp32_acc``: the layer shows it, given the settings."""
    targets("7.5")
    settings = tm.compilation_settings(use_fp32_acc=True)
    found = unservable_layers(mlp_partitioned(torch.float16, settings), settings)
    assert [(f.op, f.kind) for f in found] == [(LINEAR, "fp32_gemm")] * 2


def test_building_the_networks_leaves_the_registrys_settings_as_they_were(targets, converter_registry):
    targets("7.5")
    settings = tm.compilation_settings(torch_executed_ops={torch.ops.aten.relu.default})
    pm = mlp_partitioned(settings=settings)
    before = converter_registry.compilation_settings
    unservable_layers(pm, tm.compilation_settings())
    assert converter_registry.compilation_settings is before
    assert converter_registry.disallowed_targets == {torch.ops.aten.relu.default}


def test_assert_servable_layers_lists_them_with_the_decision(targets):
    targets("7.5")
    with pytest.raises(AssertionError) as info:
        assert_servable_layers(mlp_partitioned())
    first, *found, last = str(info.value).splitlines()
    assert first == "2 layer(s) given to TensorRT that the declared targets cannot serve:"
    assert [line.startswith(f"  _run_on_acc_0: {MATMUL_OF_LINEAR}") for line in found] == [True, True]
    assert [line.endswith("(aten.linear.default) -> fp32_gemm: FP32 GEMM on SM 7.5 [FLOAT, FLOAT, FLOAT]")
            for line in found] == [True, True]
    assert last == "trtcap: targets Turing on TensorRT-RTX = True: " + guards.capability_decision().reason
    targets("8.9")
    assert_servable_layers(mlp_partitioned())


def test_a_compiled_block_whose_engine_cannot_be_read_is_a_finding_never_a_pass(targets):
    """``compiled_blocks`` stands for compile's result on this GPU-less host: engines without a deserialised engine,
    whose ``get_layer_info()`` fails."""
    targets("7.5")
    (found,) = unservable_layers(tm.compiled_blocks(mlp_partitioned()))
    assert (found.block, found.kind) == ("_run_on_acc_0", "engine_not_read")


@pytest.mark.parametrize("module", [torch.nn.Linear(2, 2), (1, 2)], ids=["Linear", "tuple"])
def test_what_has_no_tensorrt_block_is_refused(module, targets):
    targets("7.5")
    with pytest.raises(TypeError, match="unservable_layers: "):
        unservable_layers(module)


# --- engines: what get_layer_info() returns (the engine inspector's JSON) ------------------------------------------


class RecordedEngine(torch.nn.Module):
    """Anything with ``get_layer_info()``: here, engine information recorded on a CUDA host, served as text."""

    def __init__(self, info: object) -> None:
        super().__init__()
        self.info = info

    def get_layer_info(self) -> str:
        return json.dumps(self.info)


def compiled(**blocks: object) -> torch.nn.Module:
    """A module shaped like compile's result: ``_run_on_acc_<n>`` children holding engines."""
    module = torch.nn.Module()
    for name, info in blocks.items():
        module.add_module(name, RecordedEngine(info))
    return module


def tensor(dims: list[int], datatype: str) -> dict:
    return {"Name": "t", "Dimensions": dims, "Format/Datatype": datatype}


def fused(name: str, datatype: str, dims: list[int] | None = None) -> dict:
    dims = dims or [4, 16]
    return {"Name": name, "LayerType": "runtime_fusion", "Inputs": [tensor(dims, datatype)],
            "Outputs": [tensor(dims, datatype)], "TacticName": ""}


#: The FP32 two-linear MLP as the shared notes record it (H100, torch-tensorrt-rtx 2.11, TensorRT-RTX 1.4).
FP32_MLP = {"Layers": [fused("__myl_FcAddRelu_myl0_0", "Float"), fused("__myl_FcAdd_myl0_1", "Float")],
            "Bindings": ["x", "output0"]}
NAMES_ONLY_MLP = {"Layers": ["__myl_FcAddRelu_myl0_0", "__myl_FcAdd_myl0_1"], "Bindings": ["x", "output0"]}


def test_an_engine_whose_gemm_kernels_read_float_is_an_fp32_gemm_at_turing_only(targets):
    targets("7.5")
    found = unservable_layers(compiled(_run_on_acc_0=FP32_MLP))
    assert found == [
        UnservableLayer("_run_on_acc_0", "__myl_FcAddRelu_myl0_0", "", "fp32_gemm", ("FLOAT", "FLOAT")),
        UnservableLayer("_run_on_acc_0", "__myl_FcAdd_myl0_1", "", "fp32_gemm", ("FLOAT", "FLOAT")),
    ]
    targets("8.9")
    assert unservable_layers(compiled(_run_on_acc_0=FP32_MLP)) == []


def test_an_engine_whose_gemm_kernels_read_half_is_servable(targets):
    targets("7.5")
    half = {"Layers": [fused("__myl_FcAddRelu_myl0_0", "Half"), fused("__myl_FcAdd_myl0_1", "Half")]}
    assert unservable_layers(compiled(_run_on_acc_0=half)) == []


def test_an_engine_with_names_only_says_its_precision_is_unknown(targets):
    targets("7.5")
    assert unservable_layers(compiled(_run_on_acc_0=NAMES_ONLY_MLP)) == [
        UnservableLayer("_run_on_acc_0", "(all layers)", "", "precision_unknown", ())]


def test_a_layer_the_table_does_not_know_is_unknown_never_servable(targets):
    targets("7.5")
    info = {"Layers": [fused("__myl_FcAdd_myl0_0", "Half"), fused("__myl_Frobnicate_myl0_1", "Half"),
                       {"Name": "mystery", "LayerType": "NewKind", "Inputs": [], "Outputs": []}]}
    found = unservable_layers(compiled(_run_on_acc_0=info))
    assert [(f.layer, f.kind) for f in found] == [("__myl_Frobnicate_myl0_1", "unknown"), ("mystery", "unknown")]


def test_an_engine_object_itself_and_a_bf16_tensor_in_one(targets):
    targets("7.5")
    info = {"Layers": [fused("__myl_FcAdd_myl0_0", "BFloat16")]}
    assert [f.kind for f in unservable_layers(RecordedEngine(info))] == ["bf16"]


def test_engine_information_that_is_not_json_is_a_finding(targets):
    targets("7.5")
    (found,) = unservable_layers(compiled(_run_on_acc_0="not engine information"))
    assert found.kind == "engine_not_read"


class AtenRelu(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten.relu.default(x)


def test_a_block_whose_network_cannot_be_built_is_a_finding_naming_why(targets):
    """A symbolically traced graph (as some of Torch-TensorRT's partitioning tests make) has no input metadata:
    Torch-TensorRT's interpreter cannot build its network, and that is said, never taken as servable."""
    from torch_tensorrt.dynamo import partitioning

    targets("7.5")
    pm, _ = partitioning.fast_partition(torch.fx.symbolic_trace(AtenRelu()), min_block_size=1)
    (found,) = unservable_layers(pm)
    assert (found.block, found.kind) == ("_run_on_acc_0", "network_not_built")
    assert found.layer.startswith("(network: AssertionError: Input x does not contain metadata")
