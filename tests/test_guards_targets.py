"""The one predicate: parsing targets, where they come from, the backend, and agreement with upstream."""

from __future__ import annotations

import importlib
import itertools
import subprocess
import sys
import textwrap
import warnings
from types import SimpleNamespace

import pytest

import trtcap_guards as guards

targets_mod = importlib.import_module("trtcap_guards.targets")


@pytest.fixture
def nothing_declared():
    with guards.declare_targets(None), guards.declare_backend(None):
        yield


# --- declaring targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", ["9.0", [(9, 0)], ["7.5", (9, 0)], ((9, 0), (7, 5))])
def test_declare_targets_warns_about_an_unsupported_capability(spec):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with guards.declare_targets(spec, origin="test-declare"):
            assert (9, 0) in guards.capability_decision(probe_host=False).targets
    (w,) = record
    assert issubclass(w.category, guards.UnsupportedTargetWarning)
    assert str(w.message).startswith("test-declare: TensorRT-RTX does not build for 9.0;")
    assert w.filename == __file__  # points at the caller of declare_targets


def test_declare_targets_warn_false_is_quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with guards.declare_targets([(9, 0)], origin="quiet", warn=False):
            pass


@pytest.mark.parametrize(
    "spec, named",
    [([(99999, 5)], "(99999, 5)"), ([(7, 10)], "(7, 10)"), ([(-1, 0)], "(-1, 0)"), ([(7, True)], "(7, True)"),
     (b"7.5", "b'7.5'"), (bytearray(b"7.5"), "bytearray(b'7.5')"), ({"7.5": 1}, "{'7.5': 1}"), (75, "75"),
     ([b"7.5"], "b'7.5'")],
)
def test_pairs_and_non_strings_are_held_to_the_text_forms(spec, named):
    """What the option would reject (``99999.5``, ``7.10``) is rejected as a pair too; bytes are named as given."""
    with pytest.raises(ValueError) as info:
        guards.declare_targets(spec, origin="hook x")
    message = str(info.value)
    assert message.startswith("hook x: ") and named in message
    assert "55" not in message.replace(named, "")  # not "invalid compute capability 55" (a byte of b"7.5")


@pytest.mark.parametrize("read", [lambda: guards.parse_targets("7.5,8.9", "--trt-target-sm", warn=False),
                                  lambda: targets_mod.coerce_targets([(7, 5), "8.9"], "a hook", warn=False)],
                         ids=["parse_targets", "coerce_targets"])
def test_targets_already_read_are_declared_as_they_are_not_read_again(read):
    """A value is read once where it enters (an option, a hook's answer): declaring it takes it as it is."""
    caps = read()
    with guards.declare_targets(caps, origin="read once", warn=False):
        assert guards.capability_decision(probe_host=False).targets is caps


# --- TRTCAP_TARGET_SM read at call time ------------------------------------------------------------------


def test_env_read_at_call_time(monkeypatch, nothing_declared):
    monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5")
    assert guards.trt_rtx_targets_turing()
    monkeypatch.setenv("TRTCAP_TARGET_SM", "8.9")
    assert not guards.trt_rtx_targets_turing()
    assert guards.get_target_compute_capabilities() == ((8, 9),)


# --- precedence: settings > declared > env > host device > none --------------------------------------


@pytest.mark.trtcap_no_isolation  # sets the host probe's memo in its body; monkeypatch puts it back afterwards
def test_source_precedence(monkeypatch, nothing_declared):
    monkeypatch.setattr(targets_mod, "_host", ())
    decision = guards.capability_decision()
    assert (decision.source, decision.targets, decision.targets_turing) == ("none", (), False)
    assert decision.describe() == "no targets declared and no CUDA device"

    monkeypatch.setattr(targets_mod, "_host", ((8, 6),))
    decision = guards.capability_decision()
    assert (decision.source, decision.targets) == ("host device", ((8, 6),))
    monkeypatch.setattr(targets_mod, "_host", ((7, 5),))
    assert guards.capability_decision().targets_turing  # a Turing host counts when nothing is declared

    monkeypatch.setenv("TRTCAP_TARGET_SM", "8.9")
    decision = guards.capability_decision()
    assert (decision.source, decision.targets, decision.targets_turing) == ("TRTCAP_TARGET_SM", ((8, 9),), False)

    with guards.declare_targets("7.5", origin="--trt-target-sm"):
        decision = guards.capability_decision()
        assert (decision.source, decision.origin, decision.targets) == ("declared", "--trt-target-sm", ((7, 5),))
        assert decision.describe() == "targets 7.5 from --trt-target-sm"
        assert decision.targets_turing

        settings = SimpleNamespace(target_compute_capabilities=[(8, 9), (12, 0)])
        decision = guards.capability_decision(settings)
        assert (decision.source, decision.targets, decision.targets_turing) == ("settings", ((8, 9), (12, 0)), False)
        # settings without targets (every CompilationSettings of 2.14) fall through to the declaration
        assert guards.capability_decision(SimpleNamespace()).source == "declared"
        assert guards.capability_decision(SimpleNamespace(target_compute_capabilities=[])).source == "declared"
        assert guards.capability_decision(None).source == "declared"

    # the declaration is undone: back to the variable, then to the host
    assert guards.capability_decision().source == "TRTCAP_TARGET_SM"
    monkeypatch.delenv("TRTCAP_TARGET_SM")
    assert guards.capability_decision().source == "host device"


def test_real_compilation_settings_carry_no_targets_in_2_14(tt, targets):
    from torch_tensorrt.dynamo._settings import CompilationSettings

    settings = CompilationSettings(min_block_size=1)
    assert not hasattr(settings, "target_compute_capabilities")
    targets("7.5")
    decision = guards.capability_decision(settings)
    assert decision.source == "declared" and decision.targets_turing


def test_host_not_probed_when_asked_not_to(monkeypatch, nothing_declared):
    monkeypatch.setattr(targets_mod, "_host", None)
    decision = guards.capability_decision(probe_host=False)
    assert decision.source == "none" and "not probed" in decision.origin
    assert targets_mod._host is None


def test_declare_targets_undo_handle_and_context_manager(targets):
    targets("8.9")
    handle = guards.declare_targets("7.5", origin="outer")
    assert guards.capability_decision().targets == ((7, 5),)
    with guards.declare_targets([(12, 0), "8.6"], origin="inner"):
        decision = guards.capability_decision()
        assert decision.targets == ((12, 0), (8, 6)) and decision.origin == "inner"
    assert guards.capability_decision().origin == "outer"
    handle.undo()
    handle.undo()  # idempotent
    assert guards.capability_decision().targets == ((8, 9),)


@pytest.mark.parametrize(
    "bad", [[(7,)], [(7, "5")], [(True, 5)], [(-7, 5)], [None], [7.5], 75]
)
def test_declare_targets_rejects_malformed_targets(bad):
    with pytest.raises(ValueError, match="^test: "):
        guards.declare_targets(bad, origin="test")


@pytest.mark.parametrize("targets", ["7.5"], indirect=True)
def test_targets_fixture_parametrized(targets):
    assert targets.current == ((7, 5),)
    targets("8.9")
    assert targets.current == ((8, 9),)


# --- the backend ---------------------------------------------------------------------------------------


def test_turing_safe_gemm_dtype(targets):
    import torch

    targets("7.5")
    assert guards.turing_safe_gemm_dtype() is torch.float16
    targets("8.9")
    assert guards.turing_safe_gemm_dtype() is torch.float32
    targets("8.9,7.5")
    assert guards.turing_safe_gemm_dtype() is torch.float16
    with guards.declare_backend("standard"):
        assert guards.turing_safe_gemm_dtype() is torch.float32


@pytest.mark.parametrize("value", ["tensorrt", "RTX2", "yes"])
def test_bad_backend_variable_is_an_error_naming_it(value, monkeypatch, targets):
    targets("7.5")
    monkeypatch.setenv("TRTCAP_BACKEND", value)
    with pytest.raises(ValueError) as info:
        guards.capability_decision()
    assert "TRTCAP_BACKEND" in str(info.value) and repr(value) in str(info.value)


@pytest.mark.parametrize("value, backend", [("standard", "standard"), (" RTX ", "rtx"), ("Standard", "standard")])
def test_backend_variable(value, backend, monkeypatch, targets, tt):
    targets("7.5")
    monkeypatch.setenv("TRTCAP_BACKEND", value)
    decision = guards.capability_decision()
    assert decision.backend == backend and decision.backend_origin == "TRTCAP_BACKEND"
    assert decision.targets_turing == (backend == "rtx")


def test_backend_auto_detects_the_rtx_build(monkeypatch, targets, tt):
    targets("7.5")
    assert tt.ENABLED_FEATURES.tensorrt_rtx
    monkeypatch.setenv("TRTCAP_BACKEND", "auto")
    decision = guards.capability_decision()
    assert decision.backend == "rtx" and decision.targets_turing


def test_declared_backend_outranks_the_variable(monkeypatch, targets):
    targets("7.5")
    monkeypatch.setenv("TRTCAP_BACKEND", "rtx")
    with guards.declare_backend("standard", origin="--trt-backend"):
        decision = guards.capability_decision()
        got = (decision.backend, decision.backend_origin, decision.targets_turing)
        assert got == ("standard", "--trt-backend", False)
        assert "standard TensorRT" in decision.reason
    assert guards.capability_decision().backend == "rtx"


def test_declare_backend_rejects_bad_values():
    with pytest.raises(ValueError, match="choose one of auto, rtx, standard"):
        guards.declare_backend("cuda")


# --- agreement with upstream's predicate (newer Torch-TensorRT) --------------------------------------------


def _reference_upstream(calls):
    """``torch_tensorrt._utils.trt_rtx_targets_turing`` as newer releases define it."""
    from torch_tensorrt._features import ENABLED_FEATURES

    def trt_rtx_targets_turing(settings):
        calls.append(settings)
        caps = [tuple(c) for c in getattr(settings, "target_compute_capabilities", None) or ()]
        return bool(ENABLED_FEATURES.tensorrt_rtx) and (7, 5) in caps

    return trt_rtx_targets_turing


CAPS = [(7, 5), (8, 0), (8, 6), (8, 9), (12, 0)]
GRID = [list(c) for n in (1, 2, 3) for c in itertools.combinations(CAPS, n)]


def test_installed_torch_tensorrt_has_no_upstream_predicate(tt):
    import torch_tensorrt._utils as utils

    assert not hasattr(utils, "trt_rtx_targets_turing")


@pytest.mark.parametrize("declared", ["7.5", "8.9"])
def test_guards_delegate_to_upstream_predicate_for_settings_with_targets(declared, tt, targets, monkeypatch):
    import torch_tensorrt._utils as utils

    targets(declared)  # must not matter: settings outrank the declaration
    calls = []
    reference = _reference_upstream(calls)
    monkeypatch.setattr(utils, "trt_rtx_targets_turing", reference, raising=False)
    for caps in GRID:
        settings = SimpleNamespace(target_compute_capabilities=list(caps))
        n = len(calls)
        assert guards.trt_rtx_targets_turing(settings) == reference(settings), caps
        assert len(calls) == n + 2, f"guards did not consult the upstream predicate for {caps}"
        assert guards.get_target_compute_capabilities(settings) == tuple(caps)
        # the same targets in another container (or a set) get the same answer
        for other in (tuple(caps), set(caps)):
            same = SimpleNamespace(target_compute_capabilities=other)
            assert guards.trt_rtx_targets_turing(same) == reference(same), other
    assert any(reference(SimpleNamespace(target_compute_capabilities=c)) for c in GRID)  # the grid has both answers
    assert not all(reference(SimpleNamespace(target_compute_capabilities=c)) for c in GRID)


def test_guards_follow_upstream_even_where_it_disagrees(tt, targets, monkeypatch):
    """Delegation, not a coincidence of equal answers: an upstream that says 'Turing' for 8.9 is obeyed."""
    import torch_tensorrt._utils as utils

    targets("7.5")
    monkeypatch.setattr(utils, "trt_rtx_targets_turing", lambda settings: True, raising=False)
    assert guards.trt_rtx_targets_turing(SimpleNamespace(target_compute_capabilities=[(8, 9)]))
    monkeypatch.setattr(utils, "trt_rtx_targets_turing", lambda settings: False, raising=False)
    assert not guards.trt_rtx_targets_turing(SimpleNamespace(target_compute_capabilities=[(7, 5), (8, 6)]))


def test_upstream_predicate_not_consulted_without_settings_targets(tt, targets, monkeypatch):
    import torch_tensorrt._utils as utils

    targets("7.5")
    calls = []
    monkeypatch.setattr(utils, "trt_rtx_targets_turing", _reference_upstream(calls), raising=False)
    assert guards.trt_rtx_targets_turing(None)
    assert guards.trt_rtx_targets_turing(SimpleNamespace())
    with guards.declare_backend("standard"):
        assert not guards.trt_rtx_targets_turing(SimpleNamespace(target_compute_capabilities=[(7, 5)]))
    assert calls == []


def test_upstream_predicate_that_appears_later_is_consulted(tt, targets, monkeypatch):
    """The predicate's cache must not hide an upstream predicate that appeared after a first answer."""
    import torch_tensorrt._utils as utils

    targets("7.5")
    settings = SimpleNamespace(target_compute_capabilities=[(8, 6)])
    assert not guards.trt_rtx_targets_turing(settings)  # answered (and cached) without upstream
    calls = []
    monkeypatch.setattr(utils, "trt_rtx_targets_turing", _reference_upstream(calls), raising=False)
    guards.trt_rtx_targets_turing(settings)
    assert calls, "guards answered from its cache instead of asking torch_tensorrt._utils.trt_rtx_targets_turing"


# --- import hygiene -------------------------------------------------------------------------------------


def test_import_guards_does_not_import_torch(tmp_path):
    code = textwrap.dedent(
        """
        import os, sys
        os.environ["TRTCAP_TARGET_SM"] = "7.5"
        import trtcap_guards as guards
        assert guards.parse_targets("sm_75") == ((7, 5),)
        d = guards.capability_decision(probe_host=False)
        assert d.targets == ((7, 5),) and d.source == "TRTCAP_TARGET_SM", d
        assert guards.RULES and guards.VALIDATORS and guards.markers()
        libraries = ("torch", "torch_tensorrt", "tensorrt", "tensorrt_rtx")
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in libraries)
        print("HEAVY", heavy)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout, result.stdout




def test_undoing_every_declaration_in_any_order_leaves_none_declared():
    before = guards.state_snapshot()
    try:
        with guards.declare_targets(None):
            first = guards.declare_targets("7.5", origin="first")
            second = guards.declare_targets("8.9", origin="second")
            first.undo()
            second.undo()
            assert guards.state_snapshot().targets is None
    finally:
        guards.restore_state(before)


def test_an_older_declaration_undone_first_leaves_the_newer_in_effect_then_both_are_gone():
    before = guards.state_snapshot()
    try:
        with guards.declare_targets(None), guards.declare_backend(None):
            first = guards.declare_targets("7.5", origin="first")
            backend = guards.declare_backend("standard", origin="fixture")
            second = guards.declare_targets("8.9", origin="second")
            first.undo()
            assert (guards.state_snapshot().targets, guards.capability_decision().origin) == (((8, 9),), "second")
            backend.undo()
            assert guards.capability_decision(probe_host=False).backend_origin != "fixture"
            second.undo()
            second.undo()  # a second undo does nothing
            first.undo()
            assert guards.state_snapshot().targets is None
        assert guards.state_snapshot() == before
    finally:
        guards.restore_state(before)
