"""The rules table (``trtcap_guards.rules``): every rule's node check resolves, a rule of one's own may hold a
callable, the lookups by target and by marker follow the table, and the node checks load only when a rule is
first asked about a node."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import trtcap_guards as guards
from trtcap_guards import node_checks, rules

ASYM = "tensorrt.conv_asym_pad.default"
CONV = "aten.convolution.default"


def test_every_rule_names_a_node_check_that_exists():
    for rule in guards.RULES:
        assert isinstance(rule.check, str), rule.name
        assert rules.node_check(rule.check) is getattr(node_checks, rule.check), rule.name


def test_a_rule_may_hold_its_own_callable_check():
    seen = []

    def check(node, operands):
        seen.append((node.target, operands))
        return True

    rule = guards.Rule(name="mine", capability=(7, 5), cannot_serve="my op", targets={"aten.mine.default": ((0, "x"),)},
                       check=check, validator="my_validator", marker="trt_mine", why="mine")
    node = SimpleNamespace(target="aten.mine.default", args=(), kwargs={}, meta={})
    assert rule.rejects(node) is True
    assert seen == [("aten.mine.default", ((0, "x"),))]
    assert rule.rejects(SimpleNamespace(target="aten.other.default")) is False  # not its target: never asked


def test_an_unknown_check_name_keeps_every_node_it_applies_to_off_the_restricted_target():
    """Rules never raise: a check that cannot be found is as unreadable as a node that cannot be read."""
    rule = guards.RULES[0]._replace(check="no_such_check")
    node = SimpleNamespace(target="aten.mm.default", args=(), kwargs={}, meta={})
    assert rule.rejects(node) is True


def test_the_fused_target_is_one_entry_of_the_conv3d_rule():
    rule = next(r for r in guards.RULES if r.name == "conv3d")
    assert ASYM in rule.targets and CONV in rule.targets
    assert guards.rules_for(ASYM) == (rule,) + tuple(r for r in guards.RULES if "*" in r.targets)


def test_markers_group_the_rules_in_table_order():
    grouped = guards.markers()
    assert list(grouped) == list(dict.fromkeys(r.marker for r in guards.RULES))
    assert [r.name for r in grouped["trt_fp32_gemm"]] == ["fp32_gemm", "fp32_attention", "fp32_acc_gemm"]


def test_explicit_targets_leave_out_the_every_op_rule():
    explicit = guards.explicit_targets()
    assert rules.ALL_TARGETS not in explicit
    assert {"aten.mm.default", "aten._cdist_forward.default", ASYM} <= set(explicit)
    assert len(explicit) == len(set(explicit))


def test_the_table_loads_without_its_node_checks():
    code = ("import sys, trtcap_guards.rules as r\n"
            "assert 'trtcap_guards.node_checks' not in sys.modules and 'torch' not in sys.modules\n"
            "r.markers(); r.explicit_targets(); r.markdown_table()\n"
            "assert 'trtcap_guards.node_checks' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_rules_for_an_op_are_the_rules_for_its_name():
    """README: "rules_for(target_name) (the rules naming an op)". Given the op itself (as neutralize and
    parse_target_name take it), it must not silently answer as if no rule named it."""
    import torch

    for op in (torch.ops.aten.mm.default, torch.ops.aten.linear.default, torch.ops.aten.matmul,
               torch.ops.aten._cdist_forward.default, torch.ops.aten.relu.default):
        name = guards.parse_target_name(op)
        assert guards.rules_for(op) == guards.rules_for(name), name
    assert "fp32_gemm" in [r.name for r in guards.rules_for(torch.ops.aten.mm.default)]
