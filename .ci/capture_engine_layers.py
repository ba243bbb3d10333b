"""Capture what TensorRT-RTX engines hold, layer by layer, on a CUDA host: the test data of the engine audit.

    python3 .ci/capture_engine_layers.py OUT_DIR

For each case (linear, matmul, attention, conv2d, conv3d, cdist; FP32 and FP16; static and dynamic shapes) it
compiles the model with Torch-TensorRT (stock: no guards, nothing declared, so the engine holds what the GPU gets
without the rules) and writes ``OUT_DIR/<case>.json``: the provenance (this command, the versions, the device, the
date) and, per TensorRT block, what its ``get_layer_info()`` returned. The builder config is given ``DETAILED``
profiling verbosity (Torch-TensorRT sets ``LAYER_NAMES_ONLY`` otherwise), except for the ``*_names_only`` cases,
which keep Torch-TensorRT's own setting. Models and inputs are moved to the device first: a model built on the
CPU lowers attention to a CPU-only op. A case that fails is written with its error, and the others still run.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

DEVICE = "cuda"


class Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


class MatMul(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.matmul(x, y) + 1.0


class Attention(torch.nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


class Conv2d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Conv3d(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


class Cdist(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cdist(x, y)  # more than 25 rows: the converter's matrix-multiply branch


#: name -> (model factory, input shapes, dynamic dim 0 range or None)
MODELS: dict[str, tuple[Callable[[], torch.nn.Module], list[tuple[int, ...]]]] = {
    "linear": (Linear, [(4, 16)]),
    "matmul": (MatMul, [(4, 16), (16, 8)]),
    "attention": (Attention, [(2, 4, 16, 32)] * 3),
    "conv2d": (Conv2d, [(2, 3, 16, 16)]),
    "conv3d": (Conv3d, [(2, 3, 8, 16, 16)]),
    "cdist": (Cdist, [(2, 32, 8), (2, 30, 8)]),
}
DTYPES = {"fp32": torch.float32, "fp16": torch.float16}


def _inputs(shapes: list, dtype: torch.dtype, dynamic: bool) -> tuple[list, list, Any]:
    import torch_tensorrt

    tensors = [torch.randn(*s, dtype=dtype, device=DEVICE) for s in shapes]
    if not dynamic:
        return tensors, tensors, None
    batch = torch.export.Dim("batch", min=1, max=8)
    # dim 0 of every input is the batch, except matmul's weight-like second operand
    dims = [{0: batch} if i == 0 or len(s) > 2 else None for i, s in enumerate(shapes)]
    specs = []
    for tensor, dim in zip(tensors, dims):
        if dim is None:
            specs.append(torch_tensorrt.Input.from_tensor(tensor))
        else:
            shape = list(tensor.shape)
            specs.append(torch_tensorrt.Input(min_shape=[1, *shape[1:]], opt_shape=shape, max_shape=[8, *shape[1:]],
                                              dtype=dtype))
    return tensors, specs, tuple(dims)


def _compile(model: torch.nn.Module, tensors: list, specs: list, dynamic_shapes: Any, python_runtime: bool) -> Any:
    import torch_tensorrt

    exported = torch.export.export(model, tuple(tensors), dynamic_shapes=dynamic_shapes)
    return torch_tensorrt.dynamo.compile(exported, arg_inputs=specs, min_block_size=1,
                                         use_python_runtime=python_runtime)


def _detailed(on: bool) -> Callable[[], None]:
    """Give every builder config DETAILED profiling verbosity; returns the undo."""
    import tensorrt as trt
    from torch_tensorrt.dynamo.conversion import TRTInterpreter

    original = TRTInterpreter._populate_trt_builder_config
    if not on:
        return lambda: None

    def detailed(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = original(self, *args, **kwargs)
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
        return config

    TRTInterpreter._populate_trt_builder_config = detailed

    def undo() -> None:
        TRTInterpreter._populate_trt_builder_config = original

    return undo


def capture(name: str, dtype_name: str, dynamic: bool, detailed: bool, python_runtime: bool) -> dict:
    factory, shapes = MODELS[name]
    dtype = DTYPES[dtype_name]
    case: dict[str, Any] = {"model": name, "dtype": dtype_name, "shapes": "dynamic" if dynamic else "static",
                            "input_shapes": [list(s) for s in shapes],
                            "profiling_verbosity": "DETAILED" if detailed else "Torch-TensorRT default",
                            "runtime": "python" if python_runtime else "C++"}
    undo = _detailed(detailed)
    try:
        model = factory().eval().to(DEVICE, dtype)
        tensors, specs, dims = _inputs(shapes, dtype, dynamic)
        with torch.no_grad():
            compiled = _compile(model, tensors, specs, dims, python_runtime)
            out = compiled(*tensors)
            ref = model(*tensors)
        case["max_abs_diff_vs_eager"] = float((out.float() - ref.float()).abs().max())
        engines = []
        for block, child in compiled.named_children():
            info = getattr(child, "get_layer_info", None)
            if callable(info):
                raw = info()
                engines.append({"block": block, "type": type(child).__name__, "layer_info": json.loads(raw)})
        case["engines"] = engines
    except Exception as exc:
        case["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        case["traceback"] = traceback.format_exc()[-4000:]
    finally:
        undo()
    return case


def main() -> None:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    import importlib

    import torch_tensorrt  # first: on TensorRT-RTX it makes the name tensorrt importable

    trt = importlib.import_module("tensorrt")  # only after torch_tensorrt

    provenance = {
        "command": "python3 .ci/capture_engine_layers.py OUT_DIR (on a CUDA host set up with shared/gpu-host)",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "device": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "torch": torch.__version__,
        "torch_tensorrt": torch_tensorrt.__version__,
        "tensorrt": getattr(trt, "__version__", "?"),
        "python": platform.python_version(),
    }
    cases = [(m, d, dyn, True, False) for m in MODELS for d in DTYPES for dyn in (False, True)]
    cases += [("linear", "fp32", False, False, False), ("linear", "fp32", False, True, True)]
    for name, dtype_name, dynamic, detailed, python_runtime in cases:
        stem = f"{name}_{dtype_name}_{'dynamic' if dynamic else 'static'}"
        stem += "" if detailed else "_names_only"
        stem += "_python_runtime" if python_runtime else ""
        case = capture(name, dtype_name, dynamic, detailed, python_runtime)
        (out_dir / f"{stem}.json").write_text(json.dumps({"provenance": provenance, "case": case}, indent=1) + "\n")
        layers = sum(len(e["layer_info"].get("Layers", [])) for e in case.get("engines", []))
        summary = case.get("error") or f"{len(case['engines'])} engine(s), {layers} layer(s)"
        print(f"{stem}: {summary}", flush=True)


if __name__ == "__main__":
    main()
