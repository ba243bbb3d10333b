"""``trtcap_guards.state_snapshot()`` / ``restore_state()``: the guard library's own state as one value."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from state_scan import scan

import trtcap_guards as guards


def test_a_snapshot_equals_itself_until_something_changes() -> None:
    before = guards.state_snapshot()
    assert guards.state_snapshot() == before
    undo = guards.declare_targets("8.9", origin="a test")
    assert guards.state_snapshot() != before
    undo.undo()
    assert guards.state_snapshot() == before


def test_restore_puts_back_declarations_backend_switch_and_neutralizations() -> None:
    before = guards.state_snapshot()
    decision_before = guards.capability_decision(probe_host=False)
    guards.declare_targets("7.5", origin="leaky test")
    guards.declare_backend("standard", origin="leaky test")
    guards.enable_builder_targets(False, origin="leaky test")
    guards.neutralize("aten.mm.default").__enter__()
    assert guards.neutralized() == ("aten.mm.default",)
    changed = guards.state_snapshot()
    assert guards.state.describe_changes(before, changed) == [
        "guards: declared targets 7.5 (from leaky test), were none",
        "guards: declared backend standard (from leaky test), was none",
        "guards: builder targets switched off (from leaky test)",
        "guards: left neutralized aten.mm.default",
    ]
    guards.restore_state(before)
    assert guards.state_snapshot() == before
    assert guards.neutralized() == ()
    assert guards.builder_targets_enabled().on
    # the capability decision is cached on the declarations: a restore must reach it
    assert guards.capability_decision(probe_host=False) == decision_before


def test_fired_counts_are_left_out_on_request_and_then_not_restored() -> None:
    full = guards.state_snapshot()
    one_fire = dataclasses.replace(full, fired=((("fp32_gemm", "aten.mm.default"), 1),))
    guards.restore_state(one_fire)  # as if a guard had rejected one node
    assert guards.fired() == {("fp32_gemm", "aten.mm.default"): 1}
    held = guards.state_snapshot(fired=False)
    assert held.fired is None
    guards.restore_state(full)
    assert guards.fired() == dict(full.fired)
    guards.restore_state(one_fire)
    guards.restore_state(held)  # a snapshot without counts leaves them alone
    assert guards.fired() == {("fp32_gemm", "aten.mm.default"): 1}
    assert guards.state_snapshot(fired=False) == held


def test_a_cleared_declaration_equals_any_other_cleared_one() -> None:
    before = guards.state_snapshot()
    guards.declare_targets("8.9", origin="somewhere")
    guards.declare_targets(None, origin="elsewhere")
    assert guards.state_snapshot() == before


@pytest.mark.parametrize(
    "field, value",
    [
        ("targets", "7.5"),  # text where pairs belong: every validator would raise TypeError on it
        ("targets", ((7, 5, 1),)),  # shown as "7.5" yet never equal to Turing
        ("targets", [(7, 5)]),
        ("backend", "banana"),
        ("builder_switch", None),
        ("neutralized", (("aten.mm.default", 0),)),
        ("neutralized", 5),
        ("fired", ((("fp32_gemm", "aten.mm.default"), -1),)),
        ("live", ("x",)),  # the live undo handles: three tuples of handles
        ("live", ((), (), ("not a handle",))),
    ],
)
def test_a_malformed_snapshot_is_refused_naming_the_field_and_changes_nothing(field, value) -> None:
    """A foreign or hand-made snapshot must not poison the state the validators read (they never raise), nor be
    half-applied: it is a TypeError or ValueError naming ``restore_state`` and the field, and the state stays."""
    held = guards.declare_targets("8.9", origin="before the bad restore")
    try:
        before = guards.state_snapshot()
        bad = dataclasses.replace(guards.state_snapshot(), **{field: value})
        with pytest.raises((TypeError, ValueError), match=rf"restore_state: .*\b{field}\b"):
            guards.restore_state(bad)
        assert guards.state_snapshot() == before
    finally:
        held.undo()


@pytest.mark.parametrize("snapshot", [None, {}, "state", ("targets", None)])
def test_something_that_is_no_snapshot_is_a_type_error_naming_it(snapshot) -> None:
    before = guards.state_snapshot()
    with pytest.raises(TypeError, match=r"restore_state: expected a GuardsState"):
        guards.restore_state(snapshot)
    assert guards.state_snapshot() == before


def test_every_snapshot_the_public_api_can_make_is_restored() -> None:
    """The check of a snapshot must not refuse what ``state_snapshot`` itself took: origins are shown as given
    (any value), and declaring and neutralizing leave only states the guards can be in."""
    before = guards.state_snapshot()
    try:
        guards.declare_targets("7.5,8.9", origin=None)
        guards.declare_backend("standard", origin=5)
        guards.enable_builder_targets(False, origin=b"bytes")
        with guards.neutralize("aten.mm.default"), guards.neutralize("aten.mm.default"):
            odd = guards.state_snapshot()
        guards.restore_state(before)
        guards.restore_state(odd)
        assert guards.state_snapshot() == odd
    finally:
        guards.restore_state(before)


def test_restoring_a_snapshot_puts_back_the_live_undo_handles_too():
    """What the plugin does after a test that declared and never undid: the state goes back to the snapshot, and
    so do the live handles, so an older handle's undo (a fixture's teardown) still puts back what it found."""
    before = guards.state_snapshot()
    try:
        outer = guards.declare_targets("8.9", origin="outer")
        held = guards.state_snapshot()
        guards.declare_targets("7.5", origin="leaked")  # never undone
        guards.restore_state(held)
        outer.undo()
        assert guards.state_snapshot() == before
    finally:
        guards.restore_state(before)


# --- where that state lives: one object, one owner ----------------------------------------------------------------

GUARDS_DIR = Path(__file__).resolve().parent.parent / "guards"

#: Module-level containers a guard function may fill that are no state: memos of look-ups whose answer never
#: changes in a process (a dtype, a node check's function) or that are keyed on everything they read (a decision).
MEMOS = {("trtcap_guards.targets", "_cache"), ("trtcap_guards.node_checks", "_dtypes"),
         ("trtcap_guards.rules", "_checks"), ("trtcap_guards.state", "_plain")}


def test_no_guard_module_rebinds_a_module_global() -> None:
    found = [f"{path.name}:{node.lineno} global {', '.join(node.names)}" for path in sorted(GUARDS_DIR.glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.Global)]
    assert found == []


def test_the_guards_keep_their_process_state_in_no_module_level_container_but_memos() -> None:
    """Declarations, neutralizations, fired counts, the values read from the environment: all in the one object
    ``trtcap_guards.process_state.STATE``, never in a module's own dict, set or counter."""
    found = {(m.module, m.name) for m in scan(str(GUARDS_DIR), "trtcap_guards")}
    assert found - MEMOS == set()
    assert found, "the scan found nothing at all: it would pass whatever the guards did"
    assert _objects_whose_attributes_functions_set() == ["process_state.STATE"]


def _objects_whose_attributes_functions_set() -> list:
    """Module-level names bound to an object made at import (``X = Something()``) whose attributes a function of
    that module sets: state kept in an object of its own (the scan above sees containers only)."""
    out = []
    for path in sorted(GUARDS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        made = {t.id for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign)) and
                isinstance(node.value, ast.Call)
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
        set_in_functions = {t.value.id for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
                            for node in ast.walk(fn) if isinstance(node, (ast.Assign, ast.AugAssign))
                            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)}
        out += [f"{path.stem}.{name}" for name in sorted(made & set_in_functions)]
    return out


def test_the_process_state_is_one_object_of_the_process_state_module() -> None:
    from trtcap_guards import process_state

    state = process_state.STATE
    assert type(state).__module__ == "trtcap_guards.process_state"
    before = (state.targets, state.targets_origin)
    with guards.declare_targets("8.9", origin="one owner"):
        assert (state.targets, state.targets_origin) == (((8, 9),), "one owner")
    assert (state.targets, state.targets_origin) == before


def test_a_snapshot_without_fired_counts_follows_every_kind_of_change_and_undo() -> None:
    """The pytest plugin takes one around every test and fixture: each declaration, switch, neutralization, the host
    seam (``targets._host``) and each undo must show in the next one, and only the state as it was equals it again."""
    from trtcap_guards import targets

    before = guards.state_snapshot(fired=False)
    host = targets._host
    steps = [
        lambda: guards.declare_targets("8.9", origin="a test"),
        lambda: guards.declare_targets("8.9", origin="another test"),
        lambda: guards.declare_backend("standard", origin="a test"),
        lambda: guards.enable_builder_targets(False, origin="a test"),
        lambda: guards.neutralize("aten.mm.default").__enter__(),
        lambda: guards.neutralize("aten.mm.default").__enter__(),
        lambda: setattr(targets, "_host", ((7, 5),)),
    ]
    taken = [before]
    try:
        for step in steps:
            step()
            taken.append(guards.state_snapshot(fired=False))
            assert taken[-1] != taken[-2], step
        targets._host = host
        assert guards.state_snapshot(fired=False) == taken[-2]
        guards.restore_state(taken[3])
        assert guards.state_snapshot(fired=False) == taken[3] != taken[-2]
    finally:
        guards.restore_state(before)
    assert guards.state_snapshot(fired=False) == before
