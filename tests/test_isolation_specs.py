"""What isolation holds and how (``pytest_trtcap.isolation.held_state``): a spec is active only once its module is
loaded, sees a change, names it, and restores in place (the object every holder imported by name, not a new one)."""

from __future__ import annotations

import sys
import types

import pytest

import trtcap_guards as guards
from pytest_trtcap.isolation import held_state

MODULE = "trtcap_held_state_probe"


@pytest.fixture
def table_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    module = types.ModuleType(MODULE)
    module.TABLE = {"aten.relu.default": "relu", "aten.add.Tensor": "add"}
    monkeypatch.setitem(sys.modules, MODULE, module)
    return module


def test_a_table_spec_is_active_only_once_its_module_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = held_state.table_spec(MODULE, "TABLE", "rule")
    assert spec.available() is False
    monkeypatch.setitem(sys.modules, MODULE, types.ModuleType(MODULE))
    assert spec.available() is True


def test_a_table_spec_names_each_entry_added_removed_or_replaced_and_restores_in_place(table_module) -> None:
    spec = held_state.table_spec(MODULE, "TABLE", "rule")
    table = table_module.TABLE
    snap = spec.snapshot()
    assert not spec.changed(snap)
    table["aten.mul.Tensor"] = "mul"
    del table["aten.relu.default"]
    table["aten.add.Tensor"] = "another add"
    assert spec.changed(snap)
    assert spec.describe(snap) == ["aten.add.Tensor: rule replaced", "aten.mul.Tensor: rule added",
                                   "aten.relu.default: rule removed"]
    spec.restore(snap)
    assert table_module.TABLE is table and table == {"aten.relu.default": "relu", "aten.add.Tensor": "add"}
    assert not spec.changed(snap)


def test_a_rebound_table_is_seen_and_the_original_object_put_back(table_module) -> None:
    spec = held_state.table_spec(MODULE, "TABLE", "rule")
    table = table_module.TABLE
    snap = spec.snapshot()
    table_module.TABLE = dict(table)  # equal, but a new object: the holders of the old one would miss changes
    assert spec.changed(snap)
    assert spec.describe(snap) == ["TABLE rebound"]
    spec.restore(snap)
    assert table_module.TABLE is table


def test_a_held_module_unloaded_mid_session_is_no_longer_checked_and_is_again_once_loaded(
        table_module, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which specs are available is asked again only once ``sys.modules`` changed (an in-process pytester run unloads
    what it imported): a spec must neither be asked about a module that is gone nor forgotten when it is back."""
    from pytest_trtcap.isolation.frames import Isolation

    isolation = Isolation([held_state.table_spec(MODULE, "TABLE", "rule")])
    isolation.hold()
    assert isolation.release() == []
    monkeypatch.delitem(sys.modules, MODULE)
    isolation.hold()
    assert isolation.release() == []  # asking the spec now would fail: its module is gone
    monkeypatch.setitem(sys.modules, MODULE, table_module)
    isolation.hold()
    table_module.TABLE["aten.mul.Tensor"] = "mul"
    assert isolation.release() == ["aten.mul.Tensor: rule added"]
    assert "aten.mul.Tensor" not in table_module.TABLE


@pytest.mark.usefixtures("tt")  # torch_tensorrt imported (through the guards, so on a CUDA-less host too)
def test_a_pass_manager_spec_names_an_added_pass_and_restores_the_list_in_place() -> None:
    from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import ATEN_POST_LOWERING_PASSES as manager

    spec = held_state.pass_manager_spec("ATEN_POST_LOWERING_PASSES", "ATEN_POST_LOWERING_PASSES", "lowering pass")
    passes, before = manager.passes, list(manager.passes)
    snap = spec.snapshot()

    def my_pass(gm, settings):
        return gm

    try:
        manager.passes.append(my_pass)
        assert spec.changed(snap)
        assert spec.describe(snap) == [f"added lowering pass my_pass at index {len(before)}"]
        spec.restore(snap)
        assert manager.passes is passes and passes == before
        assert not spec.changed(snap)
    finally:
        passes[:] = before
        manager.passes = passes


def test_the_guards_spec_names_a_declaration_and_undoes_it() -> None:
    (spec,) = [s for s in held_state.builtin_specs() if s.label == "guards"]
    snap = spec.snapshot()
    guards.declare_targets("8.9", origin="a test")  # left declared: a leak (conftest's fixture undoes it anyway)
    assert spec.changed(snap)
    (change,) = spec.describe(snap)
    assert change.startswith("guards: declared targets 8.9") and "a test" in change, change
    spec.restore(snap)
    assert guards.state_snapshot(fired=False).targets == snap.targets
    assert not spec.changed(snap)


def test_a_table_spec_takes_out_only_what_a_fixture_s_setup_did_that_nobody_touched_since(table_module) -> None:
    """``revert``: a fixture ended while one started after it is alive; the later one's changes stay."""
    spec = held_state.table_spec(MODULE, "TABLE", "rule")
    table = table_module.TABLE
    before = spec.snapshot()
    table["aten.mul.Tensor"] = "mul"
    del table["aten.relu.default"]
    table["aten.add.Tensor"] = "another add"
    after = spec.snapshot()
    table["aten.sub.Tensor"] = "sub"  # the later fixture's own
    table["aten.add.Tensor"] = "a later add"  # changed since: no longer as the ended fixture left it
    assert spec.revert(before, after) == ["aten.mul.Tensor: rule added", "aten.relu.default: rule removed"]
    assert table_module.TABLE is table
    assert table == {"aten.relu.default": "relu", "aten.add.Tensor": "a later add", "aten.sub.Tensor": "sub"}
