"""Guards against the real Torch-TensorRT partitioners: what lands in TensorRT (``_run_on_acc_*``) and what
falls back to PyTorch (``_run_on_gpu_*``), per declared target, dtype and backend.

Every model is exported with ``torch.export``, lowered with Torch-TensorRT's own decompositions and
``post_lowering`` and partitioned by ``fast_partition`` (or the whole ``dynamo.compile`` in dry-run mode).
"""

from __future__ import annotations

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards

pytestmark = pytest.mark.usefixtures("tt")

LINEAR = "aten.linear.default"
RELU = "aten.relu.default"
SDPA = "aten.scaled_dot_product_attention.default"
CDIST = "aten._cdist_forward.default"
MATMUL = "aten.matmul.default"
CONV = "aten.convolution.default"

mlp = tm.mlp
lowered_mlp = tm.lowered_mlp
_attention = tm.attention_graph
gemm = tm.gemm_graph
cdist_forward = tm.cdist_forward_graph
conv = tm.conv_graph


def fired(rule: str, target: str) -> int:
    return guards.fired().get((rule, target), 0)


# --- [Linear, ReLU, Linear] ----------------------------------------------------------------------


def test_fp32_mlp_at_turing_moves_both_linears_to_pytorch_and_keeps_relu_on_trt(targets, guarded):
    targets("7.5")
    before = fired("fp32_gemm", LINEAR)
    model, (x,) = mlp()
    pm = tm.partition(lowered_mlp())

    assert tm.children(pm) == ["_run_on_gpu_0", "_run_on_acc_1", "_run_on_gpu_2"]
    where = tm.placement(pm)
    assert where["gpu"] == [LINEAR, LINEAR]
    assert where["acc"] == [RELU]
    assert where["inline"] == []
    assert fired("fp32_gemm", LINEAR) - before == 2
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x), rtol=0, atol=0)


def test_fp32_mlp_at_turing_without_guards_is_all_trt(targets, tt):
    """Control: stock Torch-TensorRT 2.14 keys nothing on the target, so the guards are what moves the linears."""
    targets("7.5")
    assert not guards.is_installed()
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where["gpu"] == [] and where["acc"] == [LINEAR, RELU, LINEAR]


def test_fp16_mlp_at_turing_is_all_trt(targets, guarded):
    targets("7.5")
    model, (x,) = mlp(torch.float16)
    pm = tm.partition(lowered_mlp(torch.float16))
    where = tm.placement(pm)
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}
    assert tm.children(pm) == ["_run_on_acc_0"]
    with torch.no_grad():  # CPU has FP16 linear kernels in torch 2.14
        torch.testing.assert_close(pm(x), model(x))


def test_fp32_mlp_at_ada_is_all_trt(targets, guarded):
    targets("8.9")
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


def test_fp32_mlp_targeting_turing_and_ada_is_guarded(targets, guarded):
    """An engine built for several targets must run on all of them: SM 7.5 among them is enough."""
    targets("8.9,7.5")
    assert tm.placement(tm.partition(lowered_mlp()))["gpu"] == [LINEAR, LINEAR]


@pytest.mark.parametrize("how", ["declare_backend", "TRTCAP_BACKEND"])
def test_standard_tensorrt_backend_at_turing_is_all_trt(how, targets, guarded, monkeypatch):
    targets("7.5")
    if how == "declare_backend":
        guards.declare_backend("standard")
    else:
        monkeypatch.setenv("TRTCAP_BACKEND", "standard")
    decision = guards.capability_decision()
    assert decision.backend == "standard" and not decision.targets_turing
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


def test_fp32_mlp_with_dynamic_batch_at_turing_is_guarded(targets, guarded):
    """The dynamic-shape case is the dangerous one (the engine runs and returns zeros): it must be guarded too."""
    targets("7.5")
    model, (x,) = mlp()
    batch = torch.export.Dim("batch", min=2, max=64)
    gm = tm.lower(model, (x,), dynamic_shapes=({0: batch},))
    pm = tm.partition(gm)
    assert tm.placement(pm)["gpu"] == [LINEAR, LINEAR]
    x5 = torch.randn(5, 8)
    with torch.no_grad():
        torch.testing.assert_close(pm(x5), model(x5), rtol=0, atol=0)


def test_bf16_mlp_rejected_at_turing_accepted_at_ada(targets, guarded):
    targets("7.5")
    gm = lowered_mlp(torch.bfloat16)
    where = tm.placement(tm.partition(gm))
    assert where["acc"] == [] and where["gpu"] == [LINEAR, RELU, LINEAR]
    assert fired("bf16", RELU) >= 1
    with guards.declare_targets("8.9"):
        where = tm.placement(tm.partition(lowered_mlp(torch.bfloat16)))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


# --- attention ----------------------------------------------------------------------------------



def test_fp32_attention_at_turing_is_not_in_a_trt_block(targets, guarded):
    targets("7.5")
    pm = tm.partition(_attention(torch.float32))
    where = tm.placement(pm)
    assert SDPA not in where["acc"]
    assert where["gpu"] == [SDPA]
    q, k, v = tm.inputs_for([(1, 2, 4, 8)] * 3)
    torch.testing.assert_close(pm(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v))


def test_fp16_attention_at_turing_stays_on_trt(targets, guarded):
    targets("7.5")
    where = tm.placement(tm.partition(_attention(torch.float16)))
    assert where == {"acc": [SDPA], "gpu": [], "inline": []}


# --- the GEMM family, one op per model ---------------------------------------------------------

LOWERED_TARGET = tm.GEMM_LOWERED_TARGET



@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_gemm_lowering_keeps_the_op(op):
    calls = [str(n.target) for n in tm.call_function_nodes(gemm(op, torch.float32))]
    assert calls == [LOWERED_TARGET[op]]


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp32_gemm_at_turing_runs_in_pytorch(op, targets, guarded):
    targets("7.5")
    fn, shapes = tm.GEMM_OPS[op]
    pm = tm.partition(gemm(op, torch.float32))
    assert tm.placement(pm) == {"acc": [], "gpu": [LOWERED_TARGET[op]], "inline": []}
    args = tm.inputs_for(shapes)
    torch.testing.assert_close(pm(*args), fn(*args))


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp16_gemm_at_turing_stays_on_trt(op, targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(gemm(op, torch.float16))) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp32_gemm_at_ada_stays_on_trt(op, targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(gemm(op, torch.float32))) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}


# --- cdist ----------------------------------------------------------------------------------------


def cdist_frontend(mode: str, rows: int, dtype=torch.float32):
    return tm.lowered(
        ("cdist", mode, rows, dtype), lambda: (tm.Cdist(mode), tm.inputs_for([(rows, 4), (6, 4)], dtype))
    )



@pytest.mark.parametrize(
    "mode, rows",
    [("use_mm_for_euclid_dist", 5), ("use_mm_for_euclid_dist_if_necessary", 26)],
    ids=["use_mm", "default-26-rows"],
)
def test_cdist_matrix_multiply_branch_is_guarded(mode, rows, targets, guarded):
    """torch.cdist's mm branch lowers to ``_euclidean_dist`` (a plain matmul): the FP32 matmul runs in PyTorch."""
    targets("7.5")
    gm = cdist_frontend(mode, rows)
    assert not tm.nodes_with_target(gm, CDIST)
    pm = tm.partition(gm)
    where = tm.placement(pm)
    assert where["gpu"] == [MATMUL]
    assert MATMUL not in where["acc"] and where["acc"]  # the elementwise rest stays on TensorRT
    a, b = tm.inputs_for([(rows, 4), (6, 4)])
    torch.testing.assert_close(pm(a, b), torch.cdist(a, b, compute_mode=mode))


@pytest.mark.parametrize(
    "mode, rows",
    [("donot_use_mm_for_euclid_dist", 30), ("use_mm_for_euclid_dist_if_necessary", 25)],
    ids=["donot_use_mm", "default-25-rows"],
)
def test_cdist_elementwise_branch_stays_on_trt(mode, rows, targets, guarded):
    targets("7.5")
    gm = cdist_frontend(mode, rows)
    (node,) = tm.nodes_with_target(gm, CDIST)
    assert node.args[3] == (2 if mode.startswith("donot") else None)
    assert tm.placement(tm.partition(gm)) == {"acc": [CDIST], "gpu": [], "inline": []}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize(
    "mode, rows, rejected",
    [(1, 5, True), (None, 26, True), (0, 26, True), (None, 25, False), (0, 25, False), (2, 30, False)],
)
def test_cdist_forward_guard_follows_the_converter_branch_not_the_dtype(mode, rows, rejected, dtype, targets, guarded):
    """The node Torch-TensorRT's cdist converter gets: its matmul branch is rejected in FP16 and FP32 alike."""
    targets("7.5")
    gm = cdist_forward(mode, rows, dtype)
    where = tm.placement(tm.partition(gm))
    assert where == (
        {"acc": [], "gpu": [CDIST], "inline": []} if rejected else {"acc": [CDIST], "gpu": [], "inline": []}
    )


def test_cdist_forward_matmul_branch_accepted_at_ada(targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(cdist_forward(1, 5, torch.float16)))["acc"] == [CDIST]


def test_fp16_frontend_cdist_mm_branch_reaches_trt_as_a_plain_fp16_matmul(targets, guarded):
    """Documents the lowering: torch.cdist's FP16 mm branch never reaches ``_cdist_forward`` after torch.export;
    it arrives as an FP16 ``aten.matmul`` (which the FP32-GEMM guard, rightly, lets through)."""
    targets("7.5")
    gm = cdist_frontend("use_mm_for_euclid_dist", 5, torch.float16)
    assert not tm.nodes_with_target(gm, CDIST)
    (mm,) = tm.nodes_with_target(gm, MATMUL)
    assert mm.meta["val"].dtype == torch.float16
    assert MATMUL in tm.placement(tm.partition(gm))["acc"]


# --- convolution ----------------------------------------------------------------------------------



@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_conv3d_rejected_at_turing_conv2d_accepted(dtype, targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(conv(3, dtype))) == {"acc": [RELU], "gpu": [CONV], "inline": []}
    assert tm.placement(tm.partition(conv(2, dtype))) == {"acc": [CONV, RELU], "gpu": [], "inline": []}


def test_conv3d_accepted_at_ada(targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(conv(3))) == {"acc": [CONV, RELU], "gpu": [], "inline": []}


def test_conv3d_partitioned_output_matches_eager(targets, guarded):
    targets("7.5")
    model = tm.seeded(tm.Conv, 3)
    (x,) = tm.inputs_for([(1, 2, 5, 5, 5)])
    pm = tm.partition(conv(3))
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x))


# --- the whole compiler, dry run -------------------------------------------------------------------


def _dryrun(tt, capsys):
    x, w, b = tm.inputs_for([(3, 8), (4, 8), (4,)], seed=3)
    ep = torch.export.export(tm.LinearInputs(), (x, w, b))
    capsys.readouterr()
    out = tt.dynamo.compile(
        ep, inputs=[x, w, b], min_block_size=1, dryrun=True, offload_module_to_cpu=True
    )
    report = capsys.readouterr().out
    where = tm.placement(out)
    return out, where, report


def test_dynamo_compile_dryrun_keeps_fp32_linear_out_of_tensorrt_at_turing(tt, targets, guarded, capsys):
    targets("7.5")
    out, where, report = _dryrun(tt, capsys)
    assert where == {"acc": [RELU], "gpu": [LINEAR], "inline": []}
    assert "Dry-Run Results" in report
    in_torch = report.split("set to run in Torch:", 1)[1].split("Note:", 1)[0]
    assert "aten.linear.default" in in_torch
    assert "Submodule name: _run_on_acc_1" in report


def test_dynamo_compile_dryrun_keeps_fp32_linear_in_tensorrt_at_ada(tt, targets, guarded, capsys):
    targets("8.9")
    out, where, report = _dryrun(tt, capsys)
    assert where == {"acc": [LINEAR, RELU], "gpu": [], "inline": []}
    assert "set to run in Torch" not in report
    assert "Submodule name: _run_on_acc_0" in report


def test_dynamo_compile_dryrun_of_nn_linear_at_ada_is_one_trt_block(tt, targets, guarded, capsys):
    """With parameters (nn.Linear) the dry run also completes when nothing falls back to PyTorch."""
    targets("8.9")
    model, (x,) = mlp()
    out = tt.dynamo.compile(
        torch.export.export(model, (x,)), inputs=[x], min_block_size=1, dryrun=True, offload_module_to_cpu=True
    )
    assert tm.placement(out) == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}
    assert "Submodule name: _run_on_acc_0" in capsys.readouterr().out
