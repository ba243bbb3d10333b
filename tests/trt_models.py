"""Small real models and the real Torch-TensorRT export -> lower -> partition path, for the guards tests.

Everything here runs the installed Torch-TensorRT (no mocks): ``torch.export`` -> Torch-TensorRT's
decompositions -> ``post_lowering`` -> ``DYNAMO_CONVERTERS.set_compilation_settings`` ->
``partitioning.fast_partition(gm, min_block_size=1)``. Exports and lowerings are cached (they are the
slow part); every partition works on a deep copy, because the partitioner edits the graph it is given.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

import trtcap_guards as guards

# --- models ------------------------------------------------------------------------------------


class MLP(nn.Module):
    """[Linear, ReLU, Linear]."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class LinearInputs(nn.Module):
    """``relu(linear(x, w, b))`` with the weights as inputs.

    Used for ``torch_tensorrt.dynamo.compile(dryrun=True)`` on a CUDA-less host: a dry run moves every
    PyTorch-executed submodule to ``settings.device`` (always CUDA), which fails only for submodules that own
    parameters. With the weights passed in, the guarded linear's submodule owns none.
    """

    def forward(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(F.linear(x, w, b))


class Fn(nn.Module):
    """Wraps a function of the inputs (one op per model)."""

    def __init__(self, fn: Callable[..., torch.Tensor]) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)


class Attention(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v)


class FusedAttention(nn.Module):
    """One fused attention kernel, called directly: what ``scaled_dot_product_attention`` of a model on a CUDA device
    becomes where the release lets PyTorch decompose it (2.11). Exported only: the CPU has no kernel for it."""

    def __init__(self, kernel: str) -> None:
        super().__init__()
        self.kernel = kernel

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.kernel == "flash":
            return torch.ops.aten._scaled_dot_product_flash_attention(q, k, v)[0]
        op = getattr(torch.ops.aten, f"_scaled_dot_product_{self.kernel}_attention")
        return op(q, k, v, None, False)[0]


class Cdist(nn.Module):
    """``torch.cdist`` through its public front end (which picks the branch while tracing)."""

    def __init__(self, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> None:
        super().__init__()
        self.compute_mode = compute_mode

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.cdist(a, b, p=2.0, compute_mode=self.compute_mode)


class CdistForward(nn.Module):
    """``aten._cdist_forward`` itself, the node Torch-TensorRT's cdist converter receives."""

    def __init__(self, compute_mode: int | None) -> None:
        super().__init__()
        self.compute_mode = compute_mode

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.aten._cdist_forward(a, b, 2.0, self.compute_mode)


class Conv(nn.Module):
    def __init__(self, dims: int) -> None:
        super().__init__()
        self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(2, 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class PadConv(nn.Module):
    """Causal padding (two frames before, none after, in time) then a convolution and a ReLU: Torch-TensorRT 2.14's
    ``fuse_pad_into_convolution`` turns it into ``tensorrt.conv_asym_pad.default``; earlier releases keep
    ``constant_pad_nd`` then ``convolution`` (:func:`pad_conv_lowering`)."""

    def __init__(self, dims: int) -> None:
        super().__init__()
        self.dims = dims
        self.conv = (nn.Conv2d if dims == 2 else nn.Conv3d)(2, 3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pad = (1, 1, 2, 0) if self.dims == 2 else (1, 1, 1, 1, 2, 0)
        return torch.relu(self.conv(F.pad(x, pad)))


class Mixed(nn.Module):
    """Several guarded op families in one graph, for the property-based tests (dynamic shapes welcome)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.conv = nn.Conv3d(1, 1, 1)
        self.bias = nn.Parameter(torch.zeros(3))

    def forward(self, x: torch.Tensor, y: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.fc(x)  # linear
        mm = torch.mm(h, y)  # mm
        mv = torch.mv(h, v)  # mv
        bmm = torch.bmm(h.unsqueeze(0), y.unsqueeze(0))  # bmm
        att = F.scaled_dot_product_attention(h[None, None], h[None, None], h[None, None])
        fused = FusedAttention("efficient")(h[None, None], h[None, None], h[None, None])
        cd = torch.ops.aten._cdist_forward(h, h, 2.0, None)
        c3 = self.conv(h[None, None, :, :, None])
        return mm, mv, bmm, att, fused, cd, c3, torch.dot(v, v), torch.addmm(self.bias, h, y)


# --- single-op cases ---------------------------------------------------------------------------

#: name -> (function, input shapes). Shapes are small; FP16 versions use the same shapes.
GEMM_OPS: dict[str, tuple[Callable[..., torch.Tensor], Sequence[tuple[int, ...]]]] = {
    "bmm": (torch.bmm, [(2, 4, 8), (2, 8, 3)]),
    "matmul": (torch.matmul, [(4, 8), (8, 3)]),
    "addmm": (torch.addmm, [(3,), (4, 8), (8, 3)]),
    "mm": (torch.mm, [(4, 8), (8, 3)]),
    "mv": (torch.mv, [(4, 8), (8,)]),
    "dot": (torch.dot, [(8,), (8,)]),
}

#: What each GEMM op is after Torch-TensorRT's lowering (measured: none of them is decomposed in 2.14).
GEMM_LOWERED_TARGET: dict[str, str] = {
    "bmm": "aten.bmm.default",
    "matmul": "aten.matmul.default",
    "addmm": "aten.addmm.default",
    "mm": "aten.mm.default",
    "mv": "aten.mv.default",
    "dot": "aten.dot.default",
}


def inputs_for(
    shapes: Sequence[tuple[int, ...]], dtype: torch.dtype = torch.float32, seed: int = 0
) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(*s, generator=gen).to(dtype) for s in shapes)


# --- the Torch-TensorRT path -----------------------------------------------------------------


def torch_tensorrt() -> Any:
    return guards.import_torch_tensorrt()


def compilation_settings(**kw: Any) -> Any:
    torch_tensorrt()
    from torch_tensorrt.dynamo._settings import CompilationSettings

    kw.setdefault("min_block_size", 1)
    return CompilationSettings(**kw)


def export(model: nn.Module, args: tuple[Any, ...], dynamic_shapes: Any = None) -> Any:
    """``torch.export`` plus Torch-TensorRT's decompositions (what ``dynamo.compile`` runs first)."""
    torch_tensorrt()
    from torch_tensorrt.dynamo.lowering import get_decompositions

    ep = torch.export.export(model.eval(), tuple(args), dynamic_shapes=dynamic_shapes)
    return ep.run_decompositions(get_decompositions(False))


def lower(model: nn.Module, args: tuple[Any, ...], dynamic_shapes: Any = None) -> torch.fx.GraphModule:
    """Export and lower like Torch-TensorRT does; returns the graph the partitioner receives."""
    from torch_tensorrt.dynamo.lowering import post_lowering

    ep = export(model, args, dynamic_shapes)
    return post_lowering(ep.module(), compilation_settings())


_lowered: dict[Any, torch.fx.GraphModule] = {}


def lowered(key: Any, build: Callable[[], tuple[nn.Module, tuple[Any, ...]]]) -> torch.fx.GraphModule:
    """Cached ``lower``; ``key`` names the model and dtype, ``build`` makes ``(model, args)`` on a miss.

    Callers get a deep copy: partitioning edits the graph.
    """
    if key not in _lowered:
        model, args = build()
        _lowered[key] = lower(model, args)
    return copy.deepcopy(_lowered[key])


def partition(gm: torch.fx.GraphModule, settings: Any = None) -> torch.fx.GraphModule:
    """Set the converter registry's settings and fast-partition with ``min_block_size=1``."""
    torch_tensorrt()
    from torch_tensorrt.dynamo import partitioning
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    DYNAMO_CONVERTERS.set_compilation_settings(settings if settings is not None else compilation_settings())
    pm, _ = partitioning.fast_partition(gm, min_block_size=1)
    return pm


def export_and_partition(model: nn.Module, args: tuple[Any, ...]) -> torch.fx.GraphModule:
    """The whole recipe, uncached."""
    return partition(lower(model, args))


# --- shared, cached graphs ------------------------------------------------------------------------

#: The MLP's example input (3 rows of 8 features).
MLP_INPUT = inputs_for([(3, 8)], seed=1)[0]


def seeded(cls: Callable[..., nn.Module], *args: Any, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return cls(*args).eval()


def mlp(dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple[torch.Tensor]]:
    """The seeded [Linear, ReLU, Linear] model in ``dtype`` and its example input."""
    return seeded(MLP).to(dtype), (MLP_INPUT.to(dtype),)


def lowered_mlp(dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    return lowered(("mlp", dtype), lambda: mlp(dtype))


def gemm_graph(op: str, dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    """One op of :data:`GEMM_OPS`, exported and lowered in ``dtype``."""
    fn, shapes = GEMM_OPS[op]
    return lowered(("gemm", op, dtype), lambda: (Fn(fn), inputs_for(shapes, dtype)))


def attention_graph(dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    return lowered(("sdpa", dtype), lambda: (Attention(), inputs_for([(1, 2, 4, 8)] * 3, dtype)))


def fused_attention_graph(kernel: str, dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    """:class:`FusedAttention` of one of :data:`FUSED_ATTENTION`, exported and lowered in ``dtype``."""
    return lowered(("fused_attention", kernel, dtype),
                   lambda: (FusedAttention(kernel), inputs_for([(1, 2, 4, 8)] * 3, dtype)))


def cdist_forward_graph(mode: int | None, rows: int, dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    return lowered(
        ("cdist_forward", mode, rows, dtype), lambda: (CdistForward(mode), inputs_for([(rows, 4), (6, 4)], dtype))
    )


def conv_graph(dims: int, dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    shape = (1, 2, 5, 5) if dims == 2 else (1, 2, 5, 5, 5)
    return lowered(("conv", dims, dtype), lambda: (seeded(Conv, dims).to(dtype), inputs_for([shape], dtype)))


def pad_conv(dims: int) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """:class:`PadConv` in 2 or 3 spatial dims and its input."""
    shape = (1, 2, 5, 5) if dims == 2 else (1, 2, 4, 5, 5)
    return seeded(PadConv, dims), inputs_for([shape], seed=3)


def pad_conv_graph(dims: int) -> torch.fx.GraphModule:
    return lowered(("pad_conv", dims), lambda: pad_conv(dims))


def compiled_blocks(pm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``pm`` with each ``_run_on_acc_*`` block replaced the way ``torch_tensorrt.dynamo.compile`` replaces it
    (``setattr(partitioned_module, name, trt_module)``) by a real ``TorchTensorRTModule``, which holds an engine and
    no graph: what compile returns.

    Stands for a compiled module on this GPU-less host, where compile itself fails when it deserialises the engine:
    the module is built as ``torch.load`` builds one before restoring its state (``serialized_engine=None``), with
    the block's name and the compilation settings compile would give it.
    """
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    settings = compilation_settings()
    for name in [n for n, _ in pm.named_children() if n.startswith("_run_on_acc")]:
        setattr(pm, name, TorchTensorRTModule(None, name=name, settings=settings))
    return pm


PAD = "aten.constant_pad_nd.default"
CONV = "aten.convolution.default"
ASYM = "tensorrt.conv_asym_pad.default"  # what fuse_pad_into_convolution makes of pad -> convolution
RELU = "aten.relu.default"
FUSING_PASS = "fuse_pad_into_convolution"


def release() -> str:
    """The installed Torch-TensorRT's version, as a skip reason names it."""
    return str(torch_tensorrt().__version__)


def fuses_pad_into_convolution() -> bool:
    """Whether the release's default post-lowering passes include ``fuse_pad_into_convolution`` (2.14 does;
    2.11 to 2.13 have no such pass, and no ``tensorrt.conv_asym_pad`` op or converter)."""
    torch_tensorrt()
    from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import ATEN_POST_LOWERING_PASSES

    return any(getattr(p, "__name__", "") == FUSING_PASS for p in ATEN_POST_LOWERING_PASSES.passes)


class PadConvLowering(NamedTuple):
    """What the installed release's lowering makes of :class:`PadConv`: the node that convolves, and every call of
    the lowered graph in order."""

    conv: str
    calls: list[str]

    def without_conv(self) -> list[str]:
        return [c for c in self.calls if c != self.conv]


def pad_conv_lowering() -> PadConvLowering:
    """2.14 fuses the pad into the convolution (one ``conv_asym_pad`` node); 2.11 to 2.13 keep both nodes."""
    if fuses_pad_into_convolution():
        return PadConvLowering(ASYM, [ASYM, RELU])
    return PadConvLowering(CONV, [PAD, CONV, RELU])


SDPA = "aten.scaled_dot_product_attention.default"
SDPA_CPU = "aten._scaled_dot_product_flash_attention_for_cpu.default"  # PyTorch's CPU kernel: no converter
#: The fused attention kernels a model on a CUDA device lowers to, by :class:`FusedAttention`'s name for them.
FUSED_ATTENTION = {
    "cudnn": "aten._scaled_dot_product_cudnn_attention.default",
    "efficient": "aten._scaled_dot_product_efficient_attention.default",
    "flash": "aten._scaled_dot_product_flash_attention.default",
}


def keeps_attention_one_node() -> bool:
    """Whether the release's decompositions leave ``scaled_dot_product_attention`` to its converter (2.12 and later
    leave out PyTorch's decomposition of it). 2.11 keeps PyTorch's, which picks the kernel of the device the model
    is exported on: on the CPU ``_scaled_dot_product_flash_attention_for_cpu``, on a CUDA device a fused kernel."""
    torch_tensorrt()
    from torch_tensorrt.dynamo.lowering import get_decompositions

    return torch.ops.aten.scaled_dot_product_attention.default not in get_decompositions(False)


class AttentionLowering(NamedTuple):
    """What the installed release's lowering makes of :class:`Attention` exported on the CPU: the attention node,
    and whether the release has a converter for it."""

    node: str
    converted: bool


def attention_lowering() -> AttentionLowering:
    """2.12 and later keep one ``scaled_dot_product_attention`` node; 2.11 lowers it to PyTorch's CPU kernel."""
    if keeps_attention_one_node():
        return AttentionLowering(SDPA, True)
    return AttentionLowering(SDPA_CPU, False)


# --- reading a partitioned module --------------------------------------------------------------


def _calls(gm: torch.fx.GraphModule) -> list[str]:
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)]


def placement(pm: torch.fx.GraphModule) -> dict[str, list[str]]:
    """Which call_function targets landed in ``_run_on_acc_*`` (TensorRT) vs ``_run_on_gpu_*`` (PyTorch).

    ``inline`` lists computational nodes left in the parent graph (none with the fast partitioner).
    """
    out: dict[str, list[str]] = {"acc": [], "gpu": [], "inline": _calls(pm)}
    for name, child in pm.named_children():
        if not isinstance(child, torch.fx.GraphModule):
            continue
        if name.startswith("_run_on_acc"):
            out["acc"].extend(_calls(child))
        elif name.startswith("_run_on_gpu"):
            out["gpu"].extend(_calls(child))
        else:  # pragma: no cover - a partitioner naming scheme we do not know
            raise AssertionError(f"unexpected child {name!r} of the partitioned module")
    return out


def children(pm: torch.fx.GraphModule) -> list[str]:
    return [name for name, _ in pm.named_children()]


def nodes_with_target(gm: torch.fx.GraphModule, target_name: str) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and str(n.target) == target_name]


def call_function_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function"]


def matrix_multiply_input_dtypes(
    block: torch.fx.GraphModule, args: tuple[torch.Tensor, ...], settings: Any
) -> list[str]:
    """The input dtypes of every matrix-multiply layer Torch-TensorRT's converters build for ``block`` (a
    ``_run_on_acc_*`` module), one ``"FLOAT,FLOAT"``-style entry per layer.

    Builds the TensorRT-RTX network definition only (no engine), which needs no GPU: it shows what the converters
    hand to TensorRT, whatever dtypes the fx nodes carry.
    """
    torch_tensorrt()
    import tensorrt as trt
    from torch_tensorrt import Input
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter

    interpreter = TRTInterpreter(block, [Input.from_tensor(a) for a in args], compilation_settings=settings)
    interpreter._construct_trt_network_def()
    net = interpreter.ctx.net
    layers = [net.get_layer(i) for i in range(net.num_layers)]
    return [
        ",".join(layer.get_input(j).dtype.name for j in range(layer.num_inputs))
        for layer in layers
        if layer.type == trt.LayerType.MATRIX_MULTIPLY
    ]
