"""``trtcap_guards.state_snapshot()`` / ``restore_state()``: the guard library's own state as one value."""

from __future__ import annotations

import dataclasses

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
