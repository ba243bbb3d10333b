"""Reading compute capabilities and backends from text and pairs: the forms accepted, the errors naming the source
and value, and the warning for a capability TensorRT-RTX does not build for (``trtcap_guards.capabilities``)."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path

import pytest

import trtcap_guards as guards
from trtcap_guards.capabilities import coerce_targets, format_targets, parse_backend, unsupported_message


@pytest.fixture
def fresh_warnings(monkeypatch):
    """The predicate reports a ``TRTCAP_TARGET_SM`` value nobody parsed before: give each test a fresh memory."""
    monkeypatch.setattr(importlib.import_module("trtcap_guards.process_state").STATE, "env_targets", {})


@pytest.fixture
def nothing_declared():
    """``TRTCAP_TARGET_SM`` decides only where nothing is declared (the plugin may declare ``--trt-target-sm``)."""
    with guards.declare_targets(None), guards.declare_backend(None):
        yield


# --- parsing -----------------------------------------------------------------------------------------------

ACCEPTED = [
    ("7.5", ((7, 5),)),
    ("75", ((7, 5),)),
    ("sm_75", ((7, 5),)),
    ("SM75", ((7, 5),)),
    ("sm75", ((7, 5),)),
    (" 7.5 , 8.9 ", ((7, 5), (8, 9))),
    ("12.0", ((12, 0),)),
    ("120", ((12, 0),)),
    ("8.6,86,sm_86", ((8, 6),)),  # duplicates collapse, order kept
    ("12.1,7.5", ((12, 1), (7, 5))),
]


REJECTED = ["banana", "7", "7.5.1", "-1.0", "7.5,,8.9", "", " ", "7.5,", ",7.5", "sm_", "7,5", "1234", "7.a", "sm-75",
            "7 .5", "sm 75", "7. 5"]


def test_the_docs_say_which_spaces_are_accepted():
    """The guard library's docs on spaces, executed: around items accepted, inside one refused."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "guards.md").read_text(encoding="utf-8")
    claim = "spaces around an item are ignored (` 7.5 , 8.9 `), spaces inside one are not (`7 .5`, `sm 75` are errors)"
    assert claim in " ".join(doc.split())
    assert guards.parse_targets(" 7.5 , 8.9 ") == ((7, 5), (8, 9))
    for inside in ("7 .5", "sm 75"):
        with pytest.raises(ValueError, match="TRTCAP_TARGET_SM"):
            guards.parse_targets(inside)


@pytest.mark.parametrize("text, expected", ACCEPTED, ids=[repr(t) for t, _ in ACCEPTED])
def test_parse_targets_accepts(text, expected, fresh_warnings):
    with warnings.catch_warnings():
        warnings.simplefilter("error", guards.UnsupportedTargetWarning)
        assert guards.parse_targets(text) == expected


@pytest.mark.parametrize("text", REJECTED, ids=[repr(t) for t in REJECTED])
def test_parse_targets_rejects_naming_the_variable_and_value(text):
    with pytest.raises(ValueError) as info:
        guards.parse_targets(text)
    message = str(info.value)
    assert "TRTCAP_TARGET_SM" in message
    assert repr(text) in message


def test_parse_targets_names_the_given_source():
    with pytest.raises(ValueError, match=r"^--trt-target-sm: .*'banana'"):
        guards.parse_targets("banana", name="--trt-target-sm")


@pytest.mark.parametrize("text", [None, 75, 7.5, b"7.5"])
def test_parse_targets_rejects_non_strings(text):
    with pytest.raises(ValueError, match="TRTCAP_TARGET_SM"):
        guards.parse_targets(text)


def test_unsupported_capability_warns_naming_the_supported_set(fresh_warnings):
    with pytest.warns(guards.UnsupportedTargetWarning) as record:
        assert guards.parse_targets("9.0") == ((9, 0),)
    (w,) = record
    message = str(w.message)
    assert "TRTCAP_TARGET_SM" in message and "9.0" in message
    assert "7.5,8.0,8.6,8.9,12.0,12.1" in message


def test_unsupported_capability_mixed_with_supported_ones_warns_about_that_one_only(fresh_warnings):
    with pytest.warns(guards.UnsupportedTargetWarning, match=r"for 9\.0;"):
        assert guards.parse_targets("7.5,9.0") == ((7, 5), (9, 0))


def test_unsupported_capability_warns_every_time_the_filters_say_so():
    """No once-per-process memory: ``simplefilter("always")`` sees every call."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            guards.parse_targets("9.0", "--trt-target-sm")
    assert [type(w.message) for w in record] == [guards.UnsupportedTargetWarning] * 3


@pytest.mark.parametrize("value, maxima, expected", [
    ((7, 5), (99, 9), (7, 5)),
    ([8, 9], (99, 9), (8, 9)),
    ((0, 0), (None, None), (0, 0)),
    ((10**6, 3), (None, None), (10**6, 3)),
    ((7, 10), (99, 9), None),
    ((100, 0), (99, 9), None),
    ((-1, 2), (None, None), None),
    ((True, 1), (None, None), None),
    ((7.0, 5), (None, None), None),
    ((7, 5, 0), (None, None), None),
    ("75", (None, None), None),
    (None, (None, None), None),
])
def test_int_pair_is_the_one_check_for_pairs(value, maxima, expected):
    from trtcap_guards.capabilities import int_pair

    assert int_pair(value, maxima) == expected


@pytest.mark.parametrize("text", ["\u0667.\u0665", "\u0667\u0665", "sm_\u0667\u0665", "\uff17.\uff15"])
def test_only_ascii_digits_make_a_capability(text):
    """Other scripts' digits (Arabic-Indic, full-width) are not read as 7.5: a bad value, named."""
    with pytest.raises(ValueError, match="TRTCAP_TARGET_SM"):
        guards.parse_targets(text, "TRTCAP_TARGET_SM")

# --- pairs, duplicates, formatting, the backend --------------------------------------------------------------


def test_coerce_targets_mixes_text_and_pairs_and_collapses_duplicates_in_order():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert coerce_targets(["8.9", (7, 5), "sm_89,75"], "hook x") == ((8, 9), (7, 5))


@pytest.mark.parametrize("given", [" 7.5", "7.5 ", "\t7.5\n"])
def test_spaces_around_a_lone_item_are_ignored(given):
    assert guards.parse_targets(given) == ((7, 5),)


@pytest.mark.parametrize("given", ["7\u00a0.5", "7.5\u200b", "\u0037.\u0035\u0301"])
def test_unicode_spaces_and_marks_inside_an_item_are_refused(given):
    with pytest.raises(ValueError, match=r"invalid compute capability"):
        guards.parse_targets(given, "--trt-target-sm")


def test_format_targets_writes_dotted_capabilities_or_none():
    assert format_targets(((7, 5), (12, 0))) == "7.5,12.0"
    assert format_targets(()) == "none"


def test_unsupported_message_is_none_for_supported_capabilities_only():
    assert unsupported_message(((7, 5), (12, 1)), "x") is None
    message = unsupported_message(((7, 5), (9, 0), (10, 0)), "--trt-target-sm")
    assert message.startswith("--trt-target-sm: TensorRT-RTX does not build for 9.0,10.0;")


@pytest.mark.parametrize("text, backend", [("rtx", "rtx"), (" RTX ", "rtx"), ("Standard", "standard")])
def test_parse_backend_ignores_case_and_surrounding_spaces(text, backend):
    assert parse_backend(text) == backend


@pytest.mark.parametrize("text", ["", "tensorrt", "r tx", None, 1])
def test_parse_backend_rejects_naming_the_source_and_value(text):
    with pytest.raises(ValueError) as info:
        parse_backend(text, "--trtcap-backend")
    assert str(info.value).startswith(f"--trtcap-backend: invalid backend {text!r}")


# --- TRTCAP_TARGET_SM, as the predicate reads it -------------------------------------------------------------


@pytest.mark.parametrize("text, expected", ACCEPTED, ids=[repr(t) for t, _ in ACCEPTED])
def test_env_targets_accepted(text, expected, monkeypatch, nothing_declared, fresh_warnings):
    monkeypatch.setenv("TRTCAP_TARGET_SM", text)
    assert guards.get_target_compute_capabilities() == expected
    decision = guards.capability_decision()
    assert decision.source == "TRTCAP_TARGET_SM" and decision.origin == "TRTCAP_TARGET_SM"
    assert decision.targets_turing == ((7, 5) in expected)


@pytest.mark.parametrize("text", REJECTED, ids=[repr(t) for t in REJECTED])
def test_env_targets_rejected(text, monkeypatch, nothing_declared):
    monkeypatch.setenv("TRTCAP_TARGET_SM", text)
    with pytest.raises(ValueError) as info:
        guards.get_target_compute_capabilities()
    assert "TRTCAP_TARGET_SM" in str(info.value) and repr(text) in str(info.value)


def test_env_unsupported_target_is_a_warning_not_an_error(monkeypatch, nothing_declared, fresh_warnings):
    monkeypatch.setenv("TRTCAP_TARGET_SM", "9.0")
    supported = r"7\.5,8\.0,8\.6,8\.9,12\.0,12\.1"
    with pytest.warns(guards.UnsupportedTargetWarning, match=rf"TRTCAP_TARGET_SM.*9\.0.*{supported}"):
        assert guards.get_target_compute_capabilities() == ((9, 0),)
    assert not guards.trt_rtx_targets_turing()


def test_env_unsupported_target_under_an_error_filter_still_decides(monkeypatch, nothing_declared, fresh_warnings):
    """The predicate answers validators: a filter that turns the warning into an error must not make it raise."""
    monkeypatch.setenv("TRTCAP_TARGET_SM", "9.0,7.5")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert guards.capability_decision(probe_host=False).targets == ((9, 0), (7, 5))
        assert guards.gemm_capability_validator(None) in (True, False)


def test_a_TRTCAP_TARGET_SM_value_is_read_once_however_often_the_predicate_asks(monkeypatch, nothing_declared,
                                                                               fresh_warnings):
    monkeypatch.setenv("TRTCAP_TARGET_SM", "7.5,8.9")
    first = guards.capability_decision(probe_host=False).targets
    guards.declare_backend("rtx", origin="a change").undo()  # the predicate's cache is keyed on every change
    again = guards.capability_decision(probe_host=False)
    assert again.targets == ((7, 5), (8, 9)) and again.targets is first


class _Unprintable:
    """A value whose repr, str and equality all raise: what an error message must still survive."""

    def __repr__(self):
        raise RuntimeError("repr exploded")

    __str__ = __repr__

    def __eq__(self, other):
        raise RuntimeError("eq exploded")

    __hash__ = object.__hash__


class _UnprintableText(str):
    def __repr__(self):
        raise RuntimeError("repr exploded")


@pytest.mark.parametrize(
    "call",
    [
        lambda v: guards.parse_targets(v),
        lambda v: guards.parse_targets(_UnprintableText("banana")),
        lambda v: coerce_targets([v], "declare_targets"),
        lambda v: coerce_targets([(v, 5)], "declare_targets"),
        lambda v: parse_backend(v),
        lambda v: parse_backend(_UnprintableText("banana")),
    ],
    ids=["parse_targets", "parse_targets-text", "pair", "pair-item", "parse_backend", "parse_backend-text"],
)
def test_a_value_that_cannot_be_printed_is_still_a_value_error_naming_the_source(call):
    """The documented error is a ValueError naming the source; a value whose repr (or ==) raises must not turn
    it into that value's own exception."""
    with pytest.raises(ValueError, match=r"(TRTCAP_TARGET_SM|declare_targets|TRTCAP_BACKEND): .*unprintable"):
        call(_Unprintable())


@pytest.mark.parametrize("targets", ["7.5", [(7.0, 5.0)], [(True, False)], [(-1, 5)], [(7, 10)], [[[7, 5]]], None, 75])
def test_format_targets_refuses_what_is_no_list_of_capabilities(targets):
    """Its output is read back by ``parse_targets``: text (an IndexError before), floats, bools, out-of-range
    or nested values are a ValueError naming it, never written as "7.0.5.0", "True.False" or "-1.5"."""
    with pytest.raises(ValueError, match=r"^format_targets: "):
        format_targets(targets)


@pytest.mark.parametrize("empty", [[], (), set(), iter(())])
def test_an_empty_list_of_targets_is_refused_like_an_empty_text(empty):
    """``parse_targets("")`` is an error; ``declare_targets([])`` declared "no targets", which outranks
    ``TRTCAP_TARGET_SM`` and the host GPU and so silently switched every guard off (e.g. a CI matrix left empty)."""
    before = guards.state_snapshot()
    with pytest.raises(ValueError, match=r"^declare_targets: no compute capability"):
        guards.declare_targets(empty, origin="declare_targets")
    assert guards.state_snapshot() == before


@pytest.mark.parametrize("value", ["7" * 5000, "7.5," + "x" * 5000, ["7.5", "y" * 5000]])
def test_a_huge_bad_value_is_named_in_a_bounded_message(value):
    """The value is quoted so the user can find it, not printed whole (a CI variable can hold anything)."""
    with pytest.raises(ValueError, match="TRTCAP_TARGET_SM") as raised:
        guards.parse_targets(value, "TRTCAP_TARGET_SM") if isinstance(value, str) else guards.declare_targets(
            value, origin="TRTCAP_TARGET_SM")
    assert len(str(raised.value)) < 600, len(str(raised.value))
