"""The converter registry as isolation holds it (``pytest_trtcap.isolation.held_registry``), on the real registry of the
installed Torch-TensorRT: a change is seen, described by target, and undone in place (the same dict and list
objects the converter decorator and the partitioners hold)."""

from __future__ import annotations

import pytest
import torch

from pytest_trtcap.isolation import held_registry

# registry_guard puts the registry back whatever happens; the plugin's own isolation would hide a failed restore
pytestmark = [pytest.mark.trtcap_no_isolation, pytest.mark.usefixtures("registry_guard")]

NEW = torch.ops.aten.logsumexp.default  # no converter in Torch-TensorRT 2.14
KNOWN = torch.ops.aten.mm.default


def register(target) -> None:
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter

    dynamo_tensorrt_converter(target)(lambda ctx, target, args, kwargs, name: args[0])


def test_a_new_target_is_seen_named_and_removed_in_place(aten_converters) -> None:
    snap = held_registry.registry_snapshot()
    assert not held_registry.registry_changed(snap)
    register(NEW)
    assert NEW in aten_converters
    assert held_registry.registry_changed(snap)
    assert held_registry.registry_describe(snap) == ["aten.logsumexp.default: target added (1 converter)"]
    held_registry.registry_restore(snap)
    assert NEW not in aten_converters
    assert not held_registry.registry_changed(snap)


def test_a_second_converter_for_a_known_target_is_named_and_its_list_restored_in_place(aten_converters) -> None:
    candidates = aten_converters[KNOWN]
    before = list(candidates)
    snap = held_registry.registry_snapshot()
    register(KNOWN)
    assert len(candidates) == len(before) + 1
    assert held_registry.registry_describe(snap) == ["aten.mm.default: 1 converter added"]
    held_registry.registry_restore(snap)
    assert aten_converters[KNOWN] is candidates and candidates == before
    assert not held_registry.registry_changed(snap)


def test_a_registry_dict_appended_to_the_list_is_named_by_index(converter_registry) -> None:
    snap = held_registry.registry_snapshot()
    index = len(converter_registry.registries)
    converter_registry.registries.append({})
    assert held_registry.registry_describe(snap) == [f"DYNAMO_CONVERTERS.registries: registry added at index {index}"]
    held_registry.registry_restore(snap)
    assert len(converter_registry.registries) == index
    assert not held_registry.registry_changed(snap)


@pytest.fixture
def settings_kept(converter_registry, monkeypatch):
    """The registry's settings and disallowed targets put back after the test, whatever it did."""
    for name in ("compilation_settings", "disallowed_targets"):
        monkeypatch.setattr(converter_registry, name, getattr(converter_registry, name))
    return converter_registry


def test_disallowed_targets_edited_behind_the_settings_back_are_named_and_restored(settings_kept) -> None:
    converter_registry = settings_kept
    snap = held_registry.settings_snapshot()
    held = converter_registry.disallowed_targets
    assert not held_registry.settings_changed(snap)
    converter_registry.disallowed_targets = set(held) | {"aten.mm.default"}
    assert held_registry.settings_changed(snap)
    assert held_registry.settings_describe(snap) == ["disallowed_targets: aten.mm.default added"]
    held_registry.settings_restore(snap)
    assert converter_registry.disallowed_targets is held
    assert not held_registry.settings_changed(snap)


def test_new_compilation_settings_are_restored_silently(settings_kept) -> None:
    """Every compile sets the registry's settings (and its disallowed targets from them): no leak to report, only
    to undo."""
    from torch_tensorrt.dynamo import CompilationSettings

    converter_registry = settings_kept
    snap = held_registry.settings_snapshot()
    before, held = converter_registry.compilation_settings, converter_registry.disallowed_targets
    converter_registry.set_compilation_settings(CompilationSettings(torch_executed_ops={"aten.relu.default"}))
    assert held_registry.settings_changed(snap)
    assert held_registry.settings_describe(snap) == []
    held_registry.settings_restore(snap)
    assert converter_registry.compilation_settings is before and converter_registry.disallowed_targets is held


def test_a_fixture_s_registry_change_is_taken_out_where_nobody_changed_it_since(aten_converters) -> None:
    """``registry_revert``: a target and a candidate the ended fixture added go, a target it removed comes back
    (the same list object); a later fixture's target and candidate stay."""
    removed = torch.ops.aten.bmm.default
    stock_known, stock_removed = list(aten_converters[KNOWN]), aten_converters[removed]
    before = held_registry.registry_snapshot()
    register(NEW)
    register(KNOWN)
    del aten_converters[removed]
    after = held_registry.registry_snapshot()
    register(KNOWN)  # the later fixture's own candidate
    later = aten_converters[KNOWN][-1]
    register(torch.ops.aten.logcumsumexp.default)
    assert held_registry.registry_revert(before, after) == [
        "aten.bmm.default: target removed", "aten.logsumexp.default: target added (1 converter)",
        "aten.mm.default: 1 converter added"]
    assert NEW not in aten_converters and aten_converters[removed] is stock_removed
    assert [id(c) for c in aten_converters[KNOWN]] == [id(c) for c in [*stock_known, later]]
    assert torch.ops.aten.logcumsumexp.default in aten_converters
