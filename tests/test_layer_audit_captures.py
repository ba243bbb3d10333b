"""The engine audit on engine information captured on a CUDA host (tests/data/engine_layers: what
``.ci/capture_engine_layers.py`` wrote on an H100 with torch-tensorrt-rtx 2.11 and TensorRT-RTX 1.4; each file carries
its provenance). No GPU needed: the recorded ``get_layer_info()`` text is served by a stand-in engine."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from test_layer_audit import RecordedEngine

from pytest_trtcap import unservable_layers
from pytest_trtcap.layers import ENGINE_LAYER_TABLE, classify_engine_layer

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


# --- layers recorded in Torch-TensorRT's converter tests on the same host (tests/data/converter_suite_layers) -------

SUITE = json.loads((Path(__file__).parent / "data" / "converter_suite_layers" / "layers.json").read_text())
#: What each recorded kind of layer is, read from its LayerType, its datatypes and the tests that built it: Myelin's
#: correlation kernel is a convolution; a name Myelin cut short cannot be read; every other kind (comparisons,
#: pointwise math, reductions, gathers and scatters, Myelin's copies, jumps and synchronization, pooling) is neither a
#: GEMM, an attention nor a convolution.
SUITE_CATEGORY = {"Corr": "convolution", "Etc": "unknown"}


def suite_layer(entry: str) -> dict:
    return copy.deepcopy(next(e["layer"] for e in SUITE["layers"] if e["entry"] == entry))


def test_the_converter_suites_layers_carry_their_provenance_and_are_whole_detailed_layers():
    assert {"command", "date", "device", "torch_tensorrt", "tensorrt", "selection"} <= set(SUITE["provenance"])
    for example in SUITE["layers"]:
        assert "::" in example["test"], example
        assert {"Name", "LayerType", "Inputs", "Outputs"} <= set(example["layer"]), example


@pytest.mark.parametrize("example", SUITE["layers"], ids=lambda e: f"{e['entry']}:{e['layer']['Name'][:48]}")
def test_each_recorded_converter_suite_layer_is_classified_as_what_it_is(example):
    layer = example["layer"]
    assert classify_engine_layer(layer["Name"], layer["LayerType"]) == SUITE_CATEGORY.get(example["entry"], "other")


def test_every_entry_added_from_the_converter_suite_has_recorded_layers_and_no_more():
    added = {e.pattern for e in ENGINE_LAYER_TABLE if "converter tests" in e.seen}
    recorded = {e["entry"] for e in SUITE["layers"]}
    assert "Corr" in added and "LayerType:memset" in added
    assert recorded - {"Etc"} == added


def test_at_turing_the_recorded_suite_layers_are_servable_but_names_cut_short_are_unknown(targets):
    targets("7.5")
    for example in SUITE["layers"]:
        found = [f.kind for f in unservable_layers(RecordedEngine({"Layers": [example["layer"]]}))]
        assert found == (["unknown"] if example["entry"] == "Etc" else []), example["layer"]["Name"]


def test_myelins_correlation_kernel_is_a_3d_convolution_over_a_5d_input(targets):
    """The recorded kernel (a 1D convolution with a tensor weight, run as a 2D one) is servable; the same kernel over
    a 5-D input is what Turing cannot serve."""
    targets("7.5")
    layer = suite_layer("Corr")
    assert len(layer["Inputs"][0]["Dimensions"]) == 4
    assert unservable_layers(RecordedEngine({"Layers": [layer]})) == []
    layer["Inputs"][0]["Dimensions"].append(1)
    assert [f.kind for f in unservable_layers(RecordedEngine({"Layers": [layer]}))] == ["conv3d"]
    targets("8.9")
    assert unservable_layers(RecordedEngine({"Layers": [layer]})) == []


def test_a_recorded_servable_kernel_with_a_bf16_tensor_is_bf16(targets):
    targets("7.5")
    layer = suite_layer("Gath")
    layer["Inputs"][0]["Format/Datatype"] = "BFloat16"
    assert [f.kind for f in unservable_layers(RecordedEngine({"Layers": [layer]}))] == ["bf16"]


@pytest.mark.parametrize(("name", "category"), [
    ("__myl_MoveCastEtc_myl0_0", "unknown"),  # every token shown is known: what follows the cut is not
    ("__myl_FcAddEtc_myl0_0", "gemm"),  # a GEMM shown before the cut is a GEMM
    ("__myl_MoveConcCorrEtc_myl0_0", "convolution"),
])
def test_a_name_myelin_cut_short_is_unknown_unless_a_restricted_kernel_shows(name, category):
    assert classify_engine_layer(name, "kgen") == category
