"""The engine audit on engine information captured on a CUDA host (tests/data/engine_layers: what
``.ci/capture_engine_layers.py`` wrote on an H100 with torch-tensorrt-rtx 2.11 and TensorRT-RTX 1.4; each file carries
its provenance). No GPU needed: the recorded ``get_layer_info()`` text is served by a stand-in engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_layer_audit import RecordedEngine

from pytest_trtcap import unservable_layers

pytestmark = pytest.mark.usefixtures("tt")

DATA = Path(__file__).parent / "data" / "engine_layers"
CASES = sorted(p.stem for p in DATA.glob("*.json"))
DETAILED = [c for c in CASES if "names_only" not in c]


def captured(stem: str) -> torch.nn.Module:
    """The captured compile result: its ``_run_on_acc_<n>`` blocks, each serving its recorded layer information."""
    case = json.loads((DATA / f"{stem}.json").read_text())["case"]
    module = torch.nn.Module()
    for engine in case["engines"]:
        module.add_module(engine["block"], RecordedEngine(engine["layer_info"]))
    return module


def kinds(stem: str) -> list[tuple[str, str]]:
    """Each finding's kind and its layer's first tensor datatype."""
    return [(f.kind, (f.dtypes or ("",))[0]) for f in unservable_layers(captured(stem))]


def test_every_case_was_captured_with_its_provenance_and_matched_eager():
    assert len(CASES) == 26
    for stem in CASES:
        data = json.loads((DATA / f"{stem}.json").read_text())
        prov, case = data["provenance"], data["case"]
        assert {"command", "date", "device", "torch_tensorrt", "tensorrt"} <= set(prov), stem
        assert "error" not in case and len(case["engines"]) == 1, stem
        assert case["max_abs_diff_vs_eager"] < 0.01, stem


@pytest.mark.parametrize("stem", DETAILED)
def test_no_captured_layer_is_unknown_to_the_table(stem, targets):
    targets("7.5")
    assert "unknown" not in [k for k, _ in kinds(stem)]


@pytest.mark.parametrize("stem", ["linear_fp32_static", "linear_fp32_dynamic", "linear_fp32_static_python_runtime"])
def test_fp32_linear_engines_are_fp32_gemms_at_turing_and_nothing_at_ada(stem, targets):
    targets("7.5")
    assert kinds(stem) == [("fp32_gemm", "FLOAT")] * 2
    targets("8.9")
    assert kinds(stem) == []


@pytest.mark.parametrize("model", ["linear", "matmul", "attention", "conv2d", "conv3d", "cdist"])
@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_fp16_engines_hold_nothing_turing_cannot_serve(model, shapes, targets):
    """FP16 GEMMs, the fused FP16 attention kernel and 2D convolutions are servable; what the engine cannot show is
    the 3D convolution's rank where Myelin reads it (see the conv3d test) and which op made a GEMM (cdist)."""
    targets("7.5")
    found = kinds(f"{model}_fp16_{shapes}")
    if model == "conv3d":
        assert found == [("conv3d", "HALF")]
    else:
        assert found == []


@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_fp32_matmul_attention_and_cdist_engines_are_fp32_gemms(shapes, targets):
    targets("7.5")
    assert kinds(f"matmul_fp32_{shapes}") == [("fp32_gemm", "FLOAT")]
    assert kinds(f"attention_fp32_{shapes}") == [("fp32_gemm", "FLOAT")] * 2  # Myelin's two __fc GEMMs
    assert kinds(f"cdist_fp32_{shapes}") == [("fp32_gemm", "FLOAT")]


@pytest.mark.parametrize("shapes", ["static", "dynamic"])
def test_convolution_engines_3d_found_2d_not(shapes, targets):
    targets("7.5")
    assert kinds(f"conv3d_fp32_{shapes}") == [("conv3d", "FLOAT")]
    assert kinds(f"conv2d_fp32_{shapes}") == []


def test_the_names_only_capture_says_its_precision_is_unknown(targets):
    targets("7.5")
    assert kinds("linear_fp32_static_names_only") == [("precision_unknown", "")]
