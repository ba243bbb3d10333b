"""The converter registry as isolation holds it (``pytest_trtcap.isolation.held_registry``), on the real registry of the
installed Torch-TensorRT: a change is seen, described by target, and undone in place (the same dict and list
objects the converter decorator and the partitioners hold)."""

from __future__ import annotations

import sys

import pytest
import torch

from pytest_trtcap.isolation import held_registry, held_state

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
    snap = held_state.settings_snapshot()
    held = converter_registry.disallowed_targets
    assert not held_state.settings_changed(snap)
    converter_registry.disallowed_targets = set(held) | {"aten.mm.default"}
    assert held_state.settings_changed(snap)
    assert held_state.settings_describe(snap) == ["disallowed_targets: aten.mm.default added"]
    held_state.settings_restore(snap)
    assert converter_registry.disallowed_targets is held
    assert not held_state.settings_changed(snap)


def test_new_compilation_settings_are_restored_silently(settings_kept) -> None:
    """Every compile sets the registry's settings (and its disallowed targets from them): no leak to report, only
    to undo."""
    from torch_tensorrt.dynamo import CompilationSettings

    converter_registry = settings_kept
    snap = held_state.settings_snapshot()
    before, held = converter_registry.compilation_settings, converter_registry.disallowed_targets
    converter_registry.set_compilation_settings(CompilationSettings(torch_executed_ops={"aten.relu.default"}))
    assert held_state.settings_changed(snap)
    assert held_state.settings_describe(snap) == []
    held_state.settings_restore(snap)
    assert converter_registry.compilation_settings is before and converter_registry.disallowed_targets is held


def test_a_field_of_an_object_inside_the_settings_edited_in_place_is_named_and_put_back(settings_kept) -> None:
    """``compilation_settings.device.gpu_id = 3`` is an edit of the very object validators read, one level down."""
    from torch_tensorrt.dynamo import CompilationSettings

    converter_registry = settings_kept
    converter_registry.set_compilation_settings(CompilationSettings())
    device = converter_registry.compilation_settings.device
    before = device.gpu_id
    snap = held_state.settings_snapshot()
    assert not held_state.settings_changed(snap)
    device.gpu_id = before + 3
    assert held_state.settings_changed(snap)
    assert held_state.settings_describe(snap) == [
        f"compilation_settings.device.gpu_id changed: {before + 3}, was {before}"]
    held_state.settings_restore(snap)
    assert converter_registry.compilation_settings.device is device and device.gpu_id == before
    assert not held_state.settings_changed(snap)


def test_a_rebound_registry_name_is_named_and_pointed_back_at_the_registry(converter_registry) -> None:
    """A test that rebinds ``_ConverterRegistry.DYNAMO_CONVERTERS`` leaves the module's name on its own object;
    "restored" must mean the name points at the registry again."""
    module = sys.modules[held_registry.REGISTRY_MODULE]
    snap = held_registry.registry_snapshot()
    try:
        module.DYNAMO_CONVERTERS = object()
        assert held_registry.registry_changed(snap)
        assert held_registry.registry_describe(snap) == ["_ConverterRegistry.DYNAMO_CONVERTERS rebound"]
        held_registry.registry_restore(snap)
        assert module.DYNAMO_CONVERTERS is converter_registry
        assert not held_registry.registry_changed(snap)
    finally:
        module.DYNAMO_CONVERTERS = converter_registry


# --- a held dict found unchanged without walking it -----------------------------------------------------------


class CountedCopy(dict):
    """A held copy that counts the full comparisons made against it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        self.compared += 1
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


def _table() -> tuple:
    """A live dict of 50 entries and a list (a registry's candidates), its copy as a snapshot holds it, no seen yet."""
    live: dict = {f"k{i}": object() for i in range(50)}
    live["candidates"] = [object(), object()]
    copy = CountedCopy({k: list(v) if isinstance(v, list) else v for k, v in live.items()})
    return live, copy, [None]


def _in_place_edits(live: dict) -> list:
    """Changes that keep the size and the dict: each with its undo."""
    k0, k1, candidates = live["k0"], live["k1"], live["candidates"]
    first = candidates[0]
    return [
        (lambda: live.__setitem__("k0", object()), lambda: live.__setitem__("k0", k0)),
        (lambda: live.update(k0=object()), lambda: live.update(k0=k0)),
        (lambda: candidates.__setitem__(0, object()), lambda: candidates.__setitem__(0, first)),
        (lambda: candidates.reverse(), lambda: candidates.reverse()),
        (lambda: live.__setitem__("candidates", [object(), object()]),
         lambda: live.__setitem__("candidates", candidates)),
        # a key swapped for another; put back, it comes last: another order is no change
        (lambda: (live.pop("k1"), live.__setitem__("other", k0)), lambda: (live.pop("other"), live.update(k1=k1))),
    ]


def _each_in_place_edit_is_seen(live: dict, copy: dict, seen: list) -> None:
    for edit, undo in _in_place_edits(live):
        edit()
        assert not held_registry.same_dict(live, copy, seen), edit
        assert not held_registry.same_dict(live, copy, seen), edit  # still, on a second look
        undo()
        assert held_registry.same_dict(live, copy, seen), undo


@pytest.mark.skipif(sys.implementation.name != "cpython" or sys.version_info >= (3, 14),
                    reason="a dict's version (PEP 509) is kept by CPython 3.10 to 3.13 only")
def test_a_held_dict_found_equal_is_not_walked_again_until_it_changes() -> None:
    live, copy, seen = _table()
    assert held_registry.same_dict(live, copy, seen) and copy.compared == 1
    for _ in range(3):
        assert held_registry.same_dict(live, copy, seen)
    assert copy.compared == 1
    live["k2"] = live["k2"]  # the same object put back: no change
    assert held_registry.same_dict(live, copy, seen) and copy.compared == 1
    live["candidates"][1] = object()  # a list inside, edited in place: seen without a full comparison
    assert not held_registry.same_dict(live, copy, seen) and copy.compared == 1
    _each_in_place_edit_is_seen(*_table())


def test_each_in_place_edit_of_a_held_dict_is_seen_where_no_version_can_be_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(held_registry, "_version_offset", lambda: None)
    live, copy, seen = _table()
    assert held_registry.same_dict(live, copy, seen)
    assert held_registry.same_dict(live, copy, seen) and copy.compared == 2
    _each_in_place_edit_is_seen(live, copy, seen)


def test_every_edit_of_the_real_registry_is_seen_after_clean_checks(aten_converters) -> None:
    """Clean checks put every registry dict's version and lists together (one read, one comparison); each kind of
    edit made after them is still seen, and once restored the registry checks clean again."""
    candidates = aten_converters[KNOWN]
    several = next(v for v in aten_converters.values() if isinstance(v, list) and len(v) >= 2)
    other = object()
    edits = [
        (lambda: candidates.append(other), lambda: candidates.remove(other)),
        (lambda: several.insert(0, several.pop()), lambda: several.append(several.pop(0))),
        (lambda: candidates.__setitem__(0, other), None),
        (lambda: aten_converters.__setitem__(NEW, []), lambda: aten_converters.pop(NEW)),
        (lambda: aten_converters.pop(KNOWN), lambda: aten_converters.__setitem__(KNOWN, candidates)),
    ]
    for number, (edit, undo) in enumerate(edits):
        snap = held_registry.registry_snapshot()
        for _ in range(3):
            assert not held_registry.registry_changed(snap)
        edit()
        assert held_registry.registry_changed(snap), number
        assert held_registry.registry_changed(snap), number  # still, on a second look
        if undo is None:
            held_registry.registry_restore(snap)
        else:
            undo()
        assert not held_registry.registry_changed(snap), number
        assert not held_registry.registry_changed(snap), number
