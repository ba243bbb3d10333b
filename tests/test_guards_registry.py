"""Installing the guards into the live Torch-TensorRT converter registry, and taking them out again."""

from __future__ import annotations

import pytest
import torch
import trt_models as tm

import trtcap_guards as guards

pytestmark = pytest.mark.usefixtures("tt")

LINEAR = "aten.linear.default"
RELU = "aten.relu.default"
ASYM = tm.ASYM  # the fused asymmetric-pad convolution of Torch-TensorRT 2.14
RULE = {r.name: r for r in guards.RULES}


def snapshot(table: dict) -> dict:
    return {target: list(entries) for target, entries in table.items()}


def same_objects(a: dict, b: dict) -> bool:
    """Same targets, and per target the same ConverterSupport objects (by identity) in the same order."""
    return a.keys() == b.keys() and all(
        len(a[t]) == len(b[t]) and all(x is y for x, y in zip(a[t], b[t])) for t in a
    )


def is_guarded(support) -> bool:
    return hasattr(support.capability_validator, "_trtcap_original")


# --- install / uninstall ---------------------------------------------------------------------------


def test_install_guards_every_target_a_rule_names(aten_converters):
    try:
        names = guards.install()
        registered = {str(t) for t in aten_converters}
        # every rule's op exists in the release's registry, but the fused convolution: its op and converter come
        # with the lowering pass that makes it (2.14's fuse_pad_into_convolution; 2.11 to 2.13 have neither)
        absent = set() if tm.fuses_pad_into_convolution() else {ASYM}
        assert set(guards.explicit_targets()) - registered == absent
        assert set(guards.explicit_targets()) - absent <= set(names)
        # BF16 applies to every op, so every registered target carries a guard
        assert set(names) == registered
        assert guards.is_installed()
    finally:
        guards.uninstall()
    assert not guards.is_installed()


def test_install_twice_is_install_once(aten_converters):
    pristine = snapshot(aten_converters)
    try:
        first_names = guards.install()
        once = snapshot(aten_converters)
        second_names = guards.install()
        twice = snapshot(aten_converters)
    finally:
        guards.uninstall()
    assert first_names == second_names
    assert not same_objects(pristine, once)  # the first install did replace entries
    assert same_objects(once, twice)  # the second changed nothing at all
    for target, entries in twice.items():
        for stock, support in zip(pristine[target], entries):
            assert is_guarded(support)
            validator = support.capability_validator
            # wrapped exactly once: the guard's inner validator is the stock one, not another guard
            assert validator.__wrapped__ is stock.capability_validator
            assert validator._trtcap_original is stock
            assert not hasattr(validator.__wrapped__, "_trtcap_original")
            assert support.converter_implementation is stock.converter_implementation
            assert support.supports_dynamic_shapes == stock.supports_dynamic_shapes



def test_install_after_an_install_of_fewer_rules_adds_the_missing_guards(targets, aten_converters):
    """``install(rules)`` of one rule, then ``install()``: every rule must guard its targets, not only the first
    call's (an FP32 mm left on TensorRT at 7.5 runs and returns all zeros). Nothing is guarded twice."""
    (fp32,) = tm.nodes_with_target(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    (bf16,) = tm.nodes_with_target(tm.gemm_graph("mm", torch.bfloat16), "aten.mm.default")
    targets("7.5")
    pristine = snapshot(aten_converters)
    try:
        guards.install((RULE["bf16"],))
        mm = aten_converters[torch.ops.aten.mm.default]
        assert [s.capability_validator(fp32, None) for s in mm] == [True] * len(mm)  # only BF16 guarded so far
        guards.install()
        assert all(s.capability_validator(fp32, None) is False for s in mm)
        assert all(s.capability_validator(bf16, None) is False for s in mm)
        originals = [s.capability_validator._trtcap_original for s in mm]
        assert all(not is_guarded(o) for o in originals)  # a guard wraps the stock entry, never another guard
    finally:
        guards.uninstall()
    assert same_objects(snapshot(aten_converters), pristine)

def test_uninstall_gives_back_the_identical_registry(aten_converters):
    pristine = snapshot(aten_converters)
    lists = dict(aten_converters)  # the list objects themselves
    guards.install()
    changed = sum(1 for t in pristine for a, b in zip(pristine[t], aten_converters[t]) if a is not b)
    assert changed == sum(len(v) for v in pristine.values())
    restored = guards.uninstall()
    assert restored == changed
    assert same_objects(pristine, snapshot(aten_converters))
    assert all(aten_converters[t] is lists[t] for t in lists)  # restored in place, never rebound
    assert guards.uninstall() == 0
    assert not guards.is_installed()


def test_installed_context_manager_leaves_the_registry_as_found(aten_converters):
    pristine = snapshot(aten_converters)
    assert not guards.is_installed()
    with guards.installed() as names:
        assert guards.is_installed()
        assert LINEAR in names
    assert not guards.is_installed()
    assert same_objects(pristine, snapshot(aten_converters))

    with pytest.raises(RuntimeError, match="boom"), guards.installed():
        raise RuntimeError("boom")
    assert same_objects(pristine, snapshot(aten_converters))


def test_installed_context_manager_keeps_guards_that_were_already_there(aten_converters):
    try:
        guards.install()
        before = snapshot(aten_converters)
        with guards.installed():
            assert same_objects(before, snapshot(aten_converters))
        assert guards.is_installed()
        assert same_objects(before, snapshot(aten_converters))
    finally:
        guards.uninstall()


def test_is_installed_reads_the_registry(aten_converters):
    guards.install()
    assert guards.is_installed()
    target = next(t for t in aten_converters if str(t) == LINEAR)
    entries = aten_converters[target]
    guarded = list(entries)
    try:
        # take the guards out behind the library's back: is_installed must notice
        for table_entries in aten_converters.values():
            table_entries[:] = [getattr(s.capability_validator, "_trtcap_original", s) for s in table_entries]
        assert not guards.is_installed()
    finally:
        entries[:] = guarded
        guards.uninstall()


def test_guard_is_and_with_the_stock_validator(targets, registry_guard):
    """A guarded entry rejects what the rule forbids without asking the stock validator, else defers to it."""
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority, dynamo_tensorrt_converter

    targets("7.5")
    asked = []

    def picky_stock_validator(node, settings=None):
        asked.append(node.name)
        return False

    def never_called(ctx, target, args, kwargs, name):  # pragma: no cover - partitioning converts nothing
        raise AssertionError("converter must not run")

    dynamo_tensorrt_converter(
        torch.ops.aten.mm.default, capability_validator=picky_stock_validator, priority=ConverterPriority.HIGH
    )(never_called)
    entries = registry_guard[torch.ops.aten.mm.default]
    try:
        guards.install()
        validator = entries[0].capability_validator
        assert validator.__wrapped__ is picky_stock_validator
        (fp32,) = tm.nodes_with_target(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
        (fp16,) = tm.nodes_with_target(tm.gemm_graph("mm", torch.float16), "aten.mm.default")
        assert validator(fp32, None) is False and asked == []  # the guard answered alone
        assert validator(fp16, None) is False and asked == [fp16.name]  # the guard passed, the stock said no
        with guards.declare_targets("8.9"):
            assert validator(fp32, None) is False and asked == [fp16.name, fp32.name]
    finally:
        guards.uninstall()
        entries[:] = [s for s in entries if s.converter_implementation is not never_called]
    assert all(s.converter_implementation is not never_called for s in entries)


# --- neutralize ----------------------------------------------------------------------------------


def test_neutralize_linear_sends_fp32_linear_back_to_trt_inside_the_block_only(targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(tm.lowered_mlp()))["gpu"] == [LINEAR, LINEAR]
    before = guards.fired().get(("fp32_gemm", LINEAR), 0)
    with guards.neutralize("aten.linear.default") as name:
        assert name == LINEAR
        assert guards.neutralized() == (LINEAR,)
        where = tm.placement(tm.partition(tm.lowered_mlp()))
        assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}
        assert guards.fired().get(("fp32_gemm", LINEAR), 0) == before
    assert guards.neutralized() == ()
    where = tm.placement(tm.partition(tm.lowered_mlp()))
    assert where["gpu"] == [LINEAR, LINEAR] and where["acc"] == [RELU]


def test_neutralize_nests_and_takes_an_op_overload(targets, guarded):
    targets("7.5")
    with guards.neutralize(torch.ops.aten.linear.default):
        with guards.neutralize(LINEAR):
            assert guards.neutralized() == (LINEAR,)
        assert guards.neutralized() == (LINEAR,)  # the outer block still holds it
        assert tm.placement(tm.partition(tm.lowered_mlp()))["gpu"] == []
    assert guards.neutralized() == ()
    assert tm.placement(tm.partition(tm.lowered_mlp()))["gpu"] == [LINEAR, LINEAR]


def test_neutralize_one_target_leaves_the_others_guarded(targets, guarded):
    targets("7.5")
    with guards.neutralize("aten.mm.default"):
        assert tm.placement(tm.partition(tm.lowered_mlp()))["gpu"] == [LINEAR, LINEAR]
        assert tm.placement(tm.partition(tm.gemm_graph("mm")))["acc"] == ["aten.mm.default"]


@pytest.mark.parametrize(
    "bad", ["linear", "aten linear default", "", "aten.linear.default.extra", "9aten.mm", "aten..mm", 42]
)
def test_neutralize_bad_name_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError) as info:
        guards.neutralize(bad)
    assert repr(bad) in str(info.value)
    assert "neutralize" in str(info.value)
    assert guards.neutralized() == ()


# --- validators that already consult Torch-TensorRT's own Turing predicate -----------------------------

UPSTREAM_CALLS: list = []
UPSTREAM_ANSWER = {"turing": False}


def trt_rtx_targets_turing(settings=None):
    """Stands in for ``torch_tensorrt._utils.trt_rtx_targets_turing`` as newer stock validators call it."""
    UPSTREAM_CALLS.append(settings)
    return UPSTREAM_ANSWER["turing"]


def upstream_aware_dot_validator(node, settings=None):
    """Shaped like a newer release's GEMM validator: reject FP32 only when the upstream predicate says Turing."""
    if trt_rtx_targets_turing(settings):
        val = node.args[0].meta.get("val") if hasattr(node.args[0], "meta") else None
        return getattr(val, "dtype", None) != torch.float32
    return True


def _spare_dot_converter(ctx, target, args, kwargs, name):  # pragma: no cover - never converted here
    raise AssertionError("converter must not run")


def _register_upstream_aware_dot():
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import ConverterPriority, dynamo_tensorrt_converter

    dynamo_tensorrt_converter(
        torch.ops.aten.dot.default,
        capability_validator=upstream_aware_dot_validator,
        priority=ConverterPriority.HIGH,
    )(_spare_dot_converter)


def _drop_upstream_aware_dot(entries):
    guards.uninstall()
    entries[:] = [s for s in entries if s.converter_implementation is not _spare_dot_converter]


def test_upstream_aware_validator_is_not_double_guarded(targets, registry_guard):
    targets("7.5")
    UPSTREAM_CALLS.clear()
    UPSTREAM_ANSWER["turing"] = False  # upstream's own predicate says: not building for Turing
    entries = registry_guard[torch.ops.aten.dot.default]
    stock_dot = entries[0]
    _register_upstream_aware_dot()
    try:
        mine = entries[0]
        assert mine.capability_validator is upstream_aware_dot_validator and entries[1] is stock_dot
        assert "aten.dot.default" in guards.upstream_guarded_targets()

        guards.install()
        guards.install()
        upstream_entry, stock_entry = entries[0], entries[1]
        # the upstream-aware entry keeps only the rules on every op (BF16), never the FP32-GEMM rule again
        assert [r.name for r in upstream_entry.capability_validator.rules] == ["bf16"]
        assert upstream_entry.capability_validator.__wrapped__ is upstream_aware_dot_validator
        assert "fp32_gemm" in [r.name for r in stock_entry.capability_validator.rules]
        assert "aten.dot.default" in guards.upstream_guarded_targets()  # still seen through the guard

        before = guards.fired().get(("fp32_gemm", "aten.dot.default"), 0)
        # the upstream predicate decides for its entry: FP32 dot goes to TensorRT although guards say Turing
        assert guards.trt_rtx_targets_turing()
        pm = tm.partition(tm.gemm_graph("dot", torch.float32))
        assert tm.placement(pm) == {"acc": ["aten.dot.default"], "gpu": [], "inline": []}
        assert UPSTREAM_CALLS  # it was asked
        assert guards.fired().get(("fp32_gemm", "aten.dot.default"), 0) == before  # and guards did not fire

        UPSTREAM_ANSWER["turing"] = True  # upstream says Turing: its own check rejects FP32
        pm = tm.partition(tm.gemm_graph("dot", torch.float32))
        assert tm.placement(pm)["gpu"] == ["aten.dot.default"]

        guards.uninstall()
        assert entries[0] is mine and entries[1] is stock_dot  # the identical objects come back
    finally:
        _drop_upstream_aware_dot(entries)
        UPSTREAM_ANSWER["turing"] = False
    assert entries[0] is stock_dot
    assert all(s.converter_implementation is not _spare_dot_converter for s in entries)


def test_upstream_aware_validator_left_untouched_when_no_rule_on_every_op_applies(targets, registry_guard):
    entries = registry_guard[torch.ops.aten.dot.default]
    _register_upstream_aware_dot()
    try:
        mine = entries[0]
        guards.install(rules=(RULE["fp32_gemm"],))
        assert entries[0] is mine  # nothing to add: the upstream validator already covers FP32 GEMMs
        assert is_guarded(entries[1])  # the stock entry behind it is guarded
    finally:
        _drop_upstream_aware_dot(entries)


def test_upstream_guard_detected_through_a_closure():
    """Detection follows closures (decorated or generated validators)."""

    def make():
        def inner(node, settings=None):
            return not trt_rtx_targets_turing(settings)

        def outer(node, settings=None):
            return inner(node, settings)

        return outer

    from trtcap_guards.registry import _references_upstream_guard

    assert _references_upstream_guard(make())
    assert not _references_upstream_guard(lambda node, settings=None: True)


def test_neutralize_rejects_a_target_the_live_registry_does_not_have(tt):
    with pytest.raises(ValueError, match="'aten.nosuchop.default' is not a registered converter target"):
        guards.neutralize("aten.nosuchop.default")
    with guards.neutralize("aten.relu.default") as name:  # guarded by the BF16 rule, registered
        assert name in guards.neutralized()


def test_neutralizing_the_padded_convolution_target_puts_it_back_on_tensorrt(targets, guarded):
    """The target is the release's: 2.14's fused ``conv_asym_pad``, else ``aten.convolution`` after its pad."""
    lowering = tm.pad_conv_lowering()
    targets("7.5")
    assert tm.placement(tm.partition(tm.pad_conv_graph(3)))["gpu"] == [lowering.conv]
    with guards.neutralize(lowering.conv):
        assert tm.placement(tm.partition(tm.pad_conv_graph(3)))["acc"] == lowering.calls


class _Unprintable:
    def __repr__(self):
        raise RuntimeError("repr exploded")

    __str__ = __repr__


class _UnprintableText(str):
    def __repr__(self):
        raise RuntimeError("repr exploded")


@pytest.mark.parametrize("value", [_Unprintable(), _UnprintableText("not an op")], ids=["object", "text"])
def test_parse_target_name_and_neutralize_refuse_an_unprintable_value_with_a_value_error(value):
    """README: "anything else a ValueError", whatever the value's repr does."""
    with pytest.raises(ValueError, match=r"^target: .*unprintable"):
        guards.parse_target_name(value)
    with pytest.raises(ValueError, match=r"^neutralize: .*unprintable"):
        guards.neutralize(value)
