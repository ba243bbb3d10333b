"""The declared targets reach the TensorRT-RTX builder config that Torch-TensorRT 2.14 populates.

Everything runs the real stack on CPU: a real ``TRTInterpreter`` over an exported, lowered FP16 model, its own
``_populate_trt_builder_config``, TensorRT-RTX's own getters to read the config back, and
``builder.build_serialized_network`` for the (ahead-of-time, non-refittable) engine. ``TRTInterpreter.run()``
itself needs a device to deserialise the engine, so it is not called here.

The "a CUDA device exists" branch is reached through the project's own host probe: ``trtcap_guards.targets._host``
is the memo of ``host_capabilities()`` (probed once per process), and the only thing monkeypatched.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards
import trtcap_guards.targets as guard_targets

POPULATE = "_populate_trt_builder_config"

#: Declared targets -> the ComputeCapability members the builder config must carry, in order (written out by hand).
DECLARED = {
    "7.5": ["SM75"],
    "8.9": ["SM89"],
    "7.5,8.9": ["SM75", "SM89"],
    "8.9,7.5": ["SM89", "SM75"],
    "12.0,8.6,8.0": ["SM120", "SM86", "SM80"],
}


# --- the real stack ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trt(tt: Any) -> Any:
    import tensorrt_rtx

    return tensorrt_rtx


@pytest.fixture(scope="module")
def interpreter_class(tt: Any) -> Any:
    from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter

    return TRTInterpreter


@pytest.fixture(scope="module")
def stock_populate(interpreter_class: Any) -> Any:
    """The function Torch-TensorRT 2.14 ships (no test in this module may leave another one installed)."""
    fn = interpreter_class.__dict__[POPULATE]
    assert not hasattr(fn, "_trtcap_original"), "a previous test left the builder hook installed"
    return fn


@pytest.fixture(scope="module")
def interpreter(tt: Any, interpreter_class: Any) -> Any:
    """An FP16 [Linear, ReLU, Linear] network, converted by Torch-TensorRT (non-refittable: the 2.14 default)."""
    from torch_tensorrt import Input

    gm = tm.lowered_mlp(torch.float16)
    _, args = tm.mlp(torch.float16)
    settings = tm.compilation_settings()
    assert settings.immutable_weights  # non-refittable engines
    it = interpreter_class(gm, [Input.from_tensor(a) for a in args], compilation_settings=settings)
    it._construct_trt_network_def()
    assert it.ctx.net.num_layers > 0
    return it


def populate(interpreter: Any) -> Any:
    return interpreter._populate_trt_builder_config(False, None)


def declared_on(config: Any) -> list[str]:
    """What the config carries, read back with TensorRT-RTX's own getters."""
    return [config.get_compute_capability(i).name for i in range(config.num_compute_capabilities)]


def build(interpreter: Any, config: Any) -> bytes:
    serialized = interpreter.builder.build_serialized_network(interpreter.ctx.net, config)
    assert serialized is not None, "TensorRT-RTX built no engine"
    return bytes(serialized)


def by_hand(interpreter: Any, trt: Any, names: list[str]) -> Any:
    """A stock config on which the test itself declares ``names`` (the reference for the hooked one)."""
    config = populate(interpreter)
    assert config.num_compute_capabilities == 0
    if names:
        config.num_compute_capabilities = len(names)
        for i, name in enumerate(names):
            assert config.set_compute_capability(getattr(trt.ComputeCapability, name), i)
    return config


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``host(caps)`` makes the project's host probe report ``caps`` (``()``: no CUDA device)."""

    def set_host(caps: Any) -> None:
        monkeypatch.setattr(guard_targets, "_host", tuple(caps))

    return set_host


# --- declared targets reach the builder ---------------------------------------------------------------------


@pytest.mark.parametrize("declared", sorted(DECLARED))
def test_populated_config_carries_exactly_the_declared_targets_in_order(declared, targets, guarded, interpreter):
    targets(declared)
    config = populate(interpreter)
    assert config.num_compute_capabilities == len(DECLARED[declared])
    assert declared_on(config) == DECLARED[declared]


@pytest.mark.parametrize("declared", ["7.5", "8.9", "7.5,8.9"])
def test_non_refittable_fp16_engine_builds_for_the_declared_targets(declared, targets, guarded, interpreter, trt):
    assert interpreter.ctx.net.get_input(0).dtype == trt.float16
    targets(declared)
    hooked = populate(interpreter)
    assert not hooked.get_flag(trt.BuilderFlag.REFIT)
    assert declared_on(hooked) == DECLARED[declared]
    engine = build(interpreter, hooked)
    with guards.enable_builder_targets(False):  # stock configs from here on
        # the same engine as one whose config the test declared by hand, and not the engine of the stock config
        assert engine == build(interpreter, by_hand(interpreter, trt, DECLARED[declared]))
        assert engine != build(interpreter, populate(interpreter))


def test_the_declaration_is_read_when_the_config_is_populated(targets, guarded, interpreter):
    targets("8.9")
    assert declared_on(populate(interpreter)) == ["SM89"]
    with guards.declare_targets("7.5", origin="inner"):
        assert declared_on(populate(interpreter)) == ["SM75"]
    assert declared_on(populate(interpreter)) == ["SM89"]


def test_environment_targets_reach_the_builder(monkeypatch, targets, guarded, interpreter):
    targets(None)
    monkeypatch.setenv(guards.ENV_TARGETS, "sm_75,89")
    assert declared_on(populate(interpreter)) == ["SM75", "SM89"]


# --- a target TensorRT-RTX cannot build for ------------------------------------------------------------------


def test_an_unsupported_target_is_never_passed_to_the_builder(targets, guarded, interpreter, trt):
    with pytest.warns(guards.UnsupportedTargetWarning) as record:
        targets("7.5,9.0", origin="test-builder-mixed")
    message = str(record[0].message)
    assert "test-builder-mixed" in message and "9.0" in message
    assert "never passed to the TensorRT-RTX builder" in message
    config = populate(interpreter)
    assert declared_on(config) == ["SM75"]
    assert build(interpreter, config)
    plan = guards.builder_targets()
    assert plan.capabilities == ((7, 5),) and plan.dropped == ((9, 0),)


def test_only_unsupported_targets_leave_the_builder_untouched(targets, guarded, interpreter):
    with pytest.warns(guards.UnsupportedTargetWarning, match="never passed to the TensorRT-RTX builder"):
        targets("9.0", origin="test-builder-hopper")
    config = populate(interpreter)
    assert config.num_compute_capabilities == 0
    assert build(interpreter, config)
    plan = guards.builder_targets()
    assert not plan.sets_anything and plan.dropped == ((9, 0),)
    assert "9.0" in plan.describe()


# --- nothing changes where it must not -----------------------------------------------------------------------


def test_nothing_changes_without_the_guards(targets, interpreter, interpreter_class, stock_populate):
    targets("7.5")
    assert interpreter_class.__dict__[POPULATE] is stock_populate
    assert populate(interpreter).num_compute_capabilities == 0
    guards.install()
    assert interpreter_class.__dict__[POPULATE] is not stock_populate
    assert guards.builder_targets_installed()
    guards.uninstall()
    assert interpreter_class.__dict__[POPULATE] is stock_populate  # the identical function object
    assert not guards.builder_targets_installed()
    assert populate(interpreter).num_compute_capabilities == 0


def test_install_is_idempotent(targets, interpreter, interpreter_class, stock_populate):
    targets("7.5,8.9")
    guards.install()
    once = interpreter_class.__dict__[POPULATE]
    guards.install()
    assert interpreter_class.__dict__[POPULATE] is once  # not wrapped twice
    assert once._trtcap_original is stock_populate
    assert declared_on(populate(interpreter)) == ["SM75", "SM89"]  # declared once, not twice
    guards.uninstall()
    guards.uninstall()
    assert interpreter_class.__dict__[POPULATE] is stock_populate


def test_installed_context_manager_takes_the_hook_out_again(targets, interpreter, interpreter_class, stock_populate):
    targets("7.5")
    with guards.installed():
        assert declared_on(populate(interpreter)) == ["SM75"]
    assert interpreter_class.__dict__[POPULATE] is stock_populate


def test_nothing_changes_with_the_standard_backend(targets, guarded, interpreter):
    targets("7.5")
    guards.declare_backend("standard")
    assert populate(interpreter).num_compute_capabilities == 0
    plan = guards.builder_targets()
    assert not plan.sets_anything and "standard" in plan.reason


def test_nothing_changes_when_switched_off(targets, guarded, interpreter):
    targets("7.5")
    with guards.enable_builder_targets(False, origin="test-switch"):
        assert populate(interpreter).num_compute_capabilities == 0
        assert guards.builder_targets_enabled() == (False, "test-switch")
        assert "test-switch" in guards.builder_targets().reason
    assert guards.builder_targets_enabled() == (True, "default")
    assert declared_on(populate(interpreter)) == ["SM75"]


def test_switch_handle_undoes_once_and_nests(targets, guarded, interpreter):
    targets("8.9")
    off = guards.enable_builder_targets(False, origin="outer")
    on = guards.enable_builder_targets(True, origin="inner")
    assert declared_on(populate(interpreter)) == ["SM89"]
    on.undo()
    on.undo()  # a second undo changes nothing
    assert guards.builder_targets_enabled() == (False, "outer")
    off.undo()
    assert guards.builder_targets_enabled() == (True, "default")


def test_switch_handles_undone_out_of_order_leave_the_newer_switch_then_the_default():
    before = guards.builder_targets_enabled()
    off = guards.enable_builder_targets(False, origin="outer")
    on = guards.enable_builder_targets(True, origin="inner")
    off.undo()  # the newer switch stays in effect
    assert guards.builder_targets_enabled() == (True, "inner")
    on.undo()  # and its undo puts back what was in effect before both
    assert guards.builder_targets_enabled() == before


def test_switch_rejects_a_non_boolean():
    with pytest.raises(ValueError, match=r"enable_builder_targets.*'yes'"):
        guards.enable_builder_targets("yes")  # type: ignore[arg-type]


# --- no targets declared: CURRENT where a CUDA device exists -------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the real probe of a host without a CUDA device")
def test_no_targets_and_no_device_on_this_host_sets_nothing(targets, guarded, interpreter):
    targets(None)
    assert guard_targets.host_capabilities() == ()  # the real probe: this host has no CUDA device
    plan = guards.builder_targets()
    assert not plan.sets_anything and not plan.current
    assert "no CUDA device" in plan.reason
    assert populate(interpreter).num_compute_capabilities == 0


def test_no_targets_and_no_device_sets_nothing(targets, guarded, interpreter, host):
    targets(None)
    host(())
    assert not guards.builder_targets().sets_anything
    assert populate(interpreter).num_compute_capabilities == 0


@pytest.mark.parametrize("device", [(8, 9), (7, 5)])
def test_no_targets_and_a_device_sets_current(device, targets, guarded, interpreter, host, trt):
    targets(None)
    host([device])
    plan = guards.builder_targets()
    assert plan.current and plan.capabilities == ()
    config = populate(interpreter)
    assert config.num_compute_capabilities == 1
    assert config.get_compute_capability(0) == trt.ComputeCapability.CURRENT


def test_declared_targets_outrank_the_device(targets, guarded, interpreter, host):
    host([(8, 9)])
    targets("7.5")
    assert declared_on(populate(interpreter)) == ["SM75"]


def test_the_host_is_not_probed_for_a_header(targets, monkeypatch):
    targets(None)
    monkeypatch.setattr(guard_targets, "_host", None)  # never probed
    plan = guards.builder_targets(probe_host=False)
    assert not plan.sets_anything and not plan.current
    assert "CURRENT" in plan.describe() and "not probed" in plan.describe()
    assert guard_targets._host is None


# --- the decision alone, from a decision with provenance ------------------------------------------------------


def decision(targets, source="declared", origin="--trt-target-sm", backend="rtx") -> guards.CapabilityDecision:
    return guards.CapabilityDecision(targets, source, origin, backend, "detected", (7, 5) in targets, "test")


@pytest.mark.parametrize(
    "made, capabilities, current, dropped, text",
    [
        (decision(((7, 5),)), ((7, 5),), False, (), "7.5 (declared, from --trt-target-sm)"),
        (decision(((8, 9), (7, 5), (9, 0))), ((8, 9), (7, 5)), False, ((9, 0),),
         "8.9,7.5 (declared, from --trt-target-sm; 9.0 dropped: no TensorRT-RTX ComputeCapability)"),
        (decision(((7, 5),), "TRTCAP_TARGET_SM", "TRTCAP_TARGET_SM"), ((7, 5),), False, (),
         "7.5 (declared, from TRTCAP_TARGET_SM)"),
        (decision(((8, 9),), "host device", "host device"), (), True, (),
         "CURRENT (no targets declared; host device 8.9)"),
        (decision((), "none", "none"), (), False, (),
         "none (TensorRT-RTX's default: no targets declared and no CUDA device)"),
        (decision(((7, 5),), backend="standard"), (), False, (),
         "none (backend is standard TensorRT, detected)"),
    ],
)
def test_plan_from_a_decision(made, capabilities, current, dropped, text):
    plan = guards.plan_builder_targets(made)
    assert (plan.capabilities, plan.current, plan.dropped) == (capabilities, current, dropped)
    assert plan.sets_anything is bool(capabilities or current)
    assert plan.describe() == text


# --- standing aside where Torch-TensorRT declares the targets itself ------------------------------------------


def set_rtx_compute_capabilities(config: Any, names: list[str]) -> None:
    """Shaped like a newer release's helper, defined at module level and called by its populate function."""
    import tensorrt_rtx

    config.num_compute_capabilities = len(names)
    for i, name in enumerate(names):
        config.set_compute_capability(getattr(tensorrt_rtx.ComputeCapability, name), i)


def test_installed_torch_tensorrt_does_not_declare_targets_itself(interpreter_class, stock_populate):
    assert guards.upstream_sets_builder_targets() is False
    assert guards.builder.sets_compute_capabilities(stock_populate) is False


def test_detects_a_populate_function_that_declares_targets(stock_populate):
    def inline(self, strict_type_constraints=False, tactic_sources=None):
        config = stock_populate(self, strict_type_constraints, tactic_sources)
        config.num_compute_capabilities = 1
        return config

    def through_helper(self, strict_type_constraints=False, tactic_sources=None):
        config = stock_populate(self, strict_type_constraints, tactic_sources)
        set_rtx_compute_capabilities(config, ["SM89"])
        return config

    assert guards.builder.sets_compute_capabilities(inline)
    assert guards.builder.sets_compute_capabilities(through_helper)


def test_stands_aside_where_torch_tensorrt_declares_targets_itself(
    monkeypatch, targets, interpreter, interpreter_class, stock_populate
):
    def newer_release_populate(self, strict_type_constraints=False, tactic_sources=None):
        config = stock_populate(self, strict_type_constraints, tactic_sources)
        set_rtx_compute_capabilities(config, ["SM89"])
        return config

    monkeypatch.setattr(interpreter_class, POPULATE, newer_release_populate)
    targets("7.5")
    guards.install()
    assert interpreter_class.__dict__[POPULATE] is newer_release_populate  # not wrapped
    assert not guards.builder_targets_installed()
    assert guards.upstream_sets_builder_targets() is True
    assert declared_on(populate(interpreter)) == ["SM89"]  # upstream's choice, not ours on top of it
    assert "left to Torch-TensorRT" in guards.builder.builder_targets_status()
    guards.uninstall()
    assert interpreter_class.__dict__[POPULATE] is newer_release_populate


def test_uninstall_leaves_a_function_someone_else_installed_over_ours(
    monkeypatch, targets, interpreter_class, stock_populate
):
    guards.install()
    ours = interpreter_class.__dict__[POPULATE]

    def spy(self, *args, **kwargs):
        return ours(self, *args, **kwargs)

    monkeypatch.setattr(interpreter_class, POPULATE, spy)
    guards.uninstall()
    assert interpreter_class.__dict__[POPULATE] is spy


def test_a_builder_that_rejects_a_capability_is_an_error_naming_it(targets, guarded, interpreter):
    """A builder config that refuses a capability must not build silently for something else. TensorRT-RTX 1.6
    refuses none that the guards pass, so a stand-in config (not Torch-TensorRT) shows the error path."""
    targets("7.5")

    class RefusingConfig:
        num_compute_capabilities = 0

        def set_compute_capability(self, capability, index):
            return False

    with pytest.raises(RuntimeError, match=r"SM75"):
        guards.apply_builder_targets(RefusingConfig())


def test_a_config_without_compute_capabilities_is_left_alone(targets, guarded):
    """Standard TensorRT's builder config has no compute-capability API (stand-in: it cannot be installed here)."""
    targets("7.5")

    class StandardConfig:
        pass

    config = StandardConfig()
    plan = guards.apply_builder_targets(config)
    assert plan.capabilities == ((7, 5),)
    assert vars(config) == {}


# --- the plugin: setting, header, and the hook in a session ---------------------------------------------------

BUILD_TEST = """
import torch
import trt_models as tm
from torch_tensorrt import Input
from torch_tensorrt.dynamo.conversion._TRTInterpreter import TRTInterpreter


def test_populated_config():
    gm = tm.lowered_mlp(torch.float16)
    _, args = tm.mlp(torch.float16)
    it = TRTInterpreter(gm, [Input.from_tensor(a) for a in args], compilation_settings=tm.compilation_settings())
    config = it._populate_trt_builder_config(False, None)
    names = [config.get_compute_capability(i).name for i in range(config.num_compute_capabilities)]
    print("builder config carries:", ",".join(names) or "nothing")
"""


@pytest.mark.parametrize(
    "args, carries, header",
    [
        (["--trt-target-sm", "7.5,8.9"], "SM75,SM89",
         "trtcap: builder targets: 7.5,8.9 (declared, from --trt-target-sm); on (default)"),
        (["--trt-target-sm", "7.5", "--trtcap-builder-targets", "off"], "nothing",
         "trtcap: builder targets: off (from --trtcap-builder-targets)"),
        (["--trt-target-sm", "7.5", "--trtcap-guards", "off"], "nothing",
         "trtcap: builder targets: off (guards off, from --trtcap-guards)"),
        (["--trt-target-sm", "7.5", "--trt-backend", "standard"], "nothing",
         "trtcap: builder targets: none (backend is standard TensorRT, from --trt-backend); on (default)"),
    ],
)
def test_session_builds_for_the_declared_targets(
    pytester, tt, interpreter_class, stock_populate, args, carries, header
):
    pytester.makepyfile(BUILD_TEST)
    before = guards.builder_targets_enabled()
    result = pytester.runpytest("-v", "-s", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([header, f"*builder config carries: {carries}"])
    assert interpreter_class.__dict__[POPULATE] is stock_populate  # the session took its hook out again
    assert guards.builder_targets_enabled() == before


@pytest.mark.parametrize(
    "cli, env, ini, shown",
    [
        (["--trtcap-builder-targets", "off"], None, None, "off (from --trtcap-builder-targets)"),
        (None, "0", None, "off (from TRTCAP_BUILDER_TARGETS)"),
        (None, None, "no", "off (from ini trtcap_builder_targets)"),
        (None, "off", "on", "off (from TRTCAP_BUILDER_TARGETS)"),
        (["--trtcap-builder-targets", "on"], "off", "off", "*; on (from --trtcap-builder-targets)"),
        (None, None, None, "*; on (default)"),
    ],
)
def test_builder_targets_setting(pytester, monkeypatch, cli, env, ini, shown):
    pytester.makepyfile("def test_one(): pass")
    if env is not None:
        monkeypatch.setenv("TRTCAP_BUILDER_TARGETS", env)
    if ini is not None:
        pytester.makeini(f"[pytest]\ntrtcap_builder_targets = {ini}\n")
    before = guards.builder_targets_enabled()
    result = pytester.runpytest("-v", "--trt-target-sm", "8.9", *(cli or []))
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"trtcap: builder targets: {shown}"])
    assert guards.builder_targets_enabled() == before


def test_builder_targets_line_only_with_verbose(pytester):
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest("--trt-target-sm", "8.9")
    result.assert_outcomes(passed=1)
    assert "builder targets" not in result.stdout.str()


@pytest.mark.parametrize("where", ["cli", "env", "ini"])
def test_bad_builder_targets_value_is_a_usage_error(pytester, monkeypatch, where):
    pytester.makepyfile("def test_one(): pass")
    args = []
    if where == "cli":
        args, named = ["--trtcap-builder-targets", "maybe"], "--trtcap-builder-targets"
    elif where == "env":
        monkeypatch.setenv("TRTCAP_BUILDER_TARGETS", "maybe")
        named = "TRTCAP_BUILDER_TARGETS"
    else:
        pytester.makeini("[pytest]\ntrtcap_builder_targets = maybe\n")
        named = "ini trtcap_builder_targets"
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: trtcap: {named}: *'maybe'*"])


def test_builder_targets_option_is_documented(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--trtcap-builder-targets={on,off}*", "  trtcap_builder_targets (*):*"])


def test_verbose_header_imports_no_heavy_module(pytester):
    """The builder line is computed at plugin level: it must not import torch, torch_tensorrt or tensorrt."""
    pytester.makepyfile(
        """
        import sys

        def test_nothing_heavy_loaded():
            assert [m for m in ("torch", "torch_tensorrt", "tensorrt", "tensorrt_rtx") if m in sys.modules] == []
        """
    )
    result = pytester.runpytest_subprocess("-v", "-p", "no:cacheprovider", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["trtcap: builder targets: 7.5 (declared, from --trt-target-sm); on (default)"])
