"""``--trtcap-neutralize`` names checked against the converter targets the installed Torch-TensorRT registers
(``pytest_trtcap.settings``): a typo is a usage error naming the source, the name and the nearest real
targets, never a neutralization of nothing. The option end to end is in test_settings.py."""

from __future__ import annotations

import sys
from contextlib import ExitStack

import pytest

import trtcap_guards as guards
from pytest_trtcap import settings
from trtcap_guards.live_registry import REGISTRY_MODULE

pytestmark = pytest.mark.usefixtures("tt")


def test_registered_targets_hold_the_live_registry_by_lower_case_name():
    known = settings.registered_targets()
    assert known["aten.linear.default"] == "aten.linear.default"
    assert known["tensorrt.conv_asym_pad.default"] == "tensorrt.conv_asym_pad.default"
    assert all(lower == name.lower() for lower, name in known.items())


def test_registered_targets_are_none_while_the_registry_is_not_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, REGISTRY_MODULE)
    assert settings.registered_targets() is None


@pytest.mark.parametrize("name, nearest", [
    ("aten.linaer.default", "aten.linear.default"),
    ("ATEN.LINEAR.DEFAULT", "aten.linear.default"),
    ("aten.mm.defualt", "aten.mm.default"),
])
def test_a_typo_is_a_usage_error_naming_source_name_and_nearest(name, nearest):
    stack = ExitStack()
    with pytest.raises(pytest.UsageError) as info:
        settings.neutralize_targets(stack, ["aten.relu.default", name], "TRTCAP_NEUTRALIZE")
    message = str(info.value)
    assert message.startswith(f"trtcap: TRTCAP_NEUTRALIZE: {name!r} is not a converter target of the installed "
                              "Torch-TensorRT; nearest: ")
    assert nearest in message.partition("nearest: ")[2].split(", ")
    assert guards.neutralized() == ()  # nothing half-done: the good name before it was not neutralized either
    stack.close()


def test_a_name_far_from_every_target_says_none_close():
    far = r"'zzzz\.qqqq\.xxxx' is not a converter target .*; nearest: none close$"
    with pytest.raises(pytest.UsageError, match=far):
        settings.neutralize_targets(ExitStack(), ["zzzz.qqqq.xxxx"], "--trtcap-neutralize")


def test_real_targets_are_neutralized_until_the_stack_closes():
    with ExitStack() as stack:
        settings.neutralize_targets(stack, ["aten.linear.default", "tensorrt.conv_asym_pad.default"], "ini")
        assert guards.neutralized() == ("aten.linear.default", "tensorrt.conv_asym_pad.default")
    assert guards.neutralized() == ()


def test_before_the_registry_is_imported_only_a_rules_target_in_other_case_is_refused(monkeypatch):
    monkeypatch.delitem(sys.modules, REGISTRY_MODULE)
    with pytest.raises(pytest.UsageError) as info:
        settings.neutralize_targets(ExitStack(), ["Aten.Linear.Default"], "--trtcap-neutralize")
    assert str(info.value).startswith(
        "trtcap: --trtcap-neutralize: 'Aten.Linear.Default' is not a converter target (converter targets are lower "
        "case); nearest: aten.linear.default"
    )


def test_after_collection_and_in_the_xdist_controller_a_typo_is_refused_and_good_names_pass():
    settings.check_neutralized_after_collection(["aten.linear.default"], "TRTCAP_NEUTRALIZE")
    settings.check_neutralized_in_xdist_controller(["aten.linear.default"], "TRTCAP_NEUTRALIZE")
    for check in (settings.check_neutralized_after_collection, settings.check_neutralized_in_xdist_controller):
        with pytest.raises(pytest.UsageError, match=r"^trtcap: TRTCAP_NEUTRALIZE: 'aten\.linear\.defalt' is not"):
            check(["aten.linear.defalt"], "TRTCAP_NEUTRALIZE")


def test_after_collection_nothing_is_checked_while_the_registry_is_not_imported(monkeypatch):
    monkeypatch.delitem(sys.modules, REGISTRY_MODULE)
    settings.check_neutralized_after_collection(["aten.linear.defalt"], "TRTCAP_NEUTRALIZE")  # no error: cannot know
