"""What isolation holds and how (``pytest_trtcap.isolation.held_state``): a spec is active only once its module is
loaded, sees a change, names it, and restores in place (the object every holder imported by name, not a new one)."""

from __future__ import annotations

import os
import sys
import types

import pytest

import trtcap_guards as guards
from pytest_trtcap.isolation import held_state
from pytest_trtcap.isolation.ledger import Ledger, Unit

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
    """An in-process pytester run unloads what it imported: a spec must neither be asked about a module that is gone
    nor forgotten when it is back."""
    ledger = Ledger([held_state.table_spec(MODULE, "TABLE", "rule")])
    ledger.see_new()
    assert _test(ledger) == []
    monkeypatch.delitem(sys.modules, MODULE)
    assert _test(ledger) == []  # asking the spec now would fail: its module is gone
    monkeypatch.setitem(sys.modules, MODULE, table_module)
    assert _test(ledger, lambda: table_module.TABLE.update({"aten.mul.Tensor": "mul"})) == [
        ["aten.mul.Tensor: rule added"]]
    assert "aten.mul.Tensor" not in table_module.TABLE


def _test(ledger: Ledger, body=lambda: None) -> list[list[str]]:
    """One test's run through ``ledger``: its start, its body, its end; the leak lines found."""
    test = Unit("t", "test")
    ledger.boundary(test)
    body()
    ledger.boundary(test)
    return [leak.lines for leak in ledger.end(test)]


def test_a_duplicate_atomic_subgraphs_entry_is_named_as_added(tt) -> None:
    from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS

    (spec,) = [s for s in held_state.builtin_specs() if s.label == "ATOMIC_SUBGRAPHS"]
    snap = spec.snapshot()
    try:
        ATOMIC_SUBGRAPHS.append(ATOMIC_SUBGRAPHS[0])
        (line,) = spec.describe(snap)
        assert line.startswith("added ATOMIC_SUBGRAPHS entry ("), line
    finally:
        spec.restore(snap)
    assert not spec.changed(snap)


def test_the_settings_environment_variables_are_held_and_put_back(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_trtcap.isolation.drive import environment_spec

    monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5")
    monkeypatch.delenv("TRTCAP_STRICT", raising=False)
    spec = environment_spec()
    snap = spec.snapshot()
    monkeypatch.setenv("TRTCAP_TARGET_SM", "8.9")
    monkeypatch.setenv("TRTCAP_STRICT", "1")
    assert spec.changed(snap)
    assert spec.describe(snap) == ["environment TRTCAP_TARGET_SM='8.9', was '7.5'",
                                   "environment TRTCAP_STRICT='1', was unset"]
    spec.restore(snap)
    assert os.environ["TRTCAP_TARGET_SM"] == "7.5" and "TRTCAP_STRICT" not in os.environ


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
