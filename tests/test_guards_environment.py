"""The names the whole project shares without loading anything (``trtcap_guards.environment``): the capability
markers' names in the rules table's order, the backend names, and how a compute capability is written."""

from __future__ import annotations

import pytest

import trtcap_guards as guards
from trtcap_guards import environment
from trtcap_guards.capabilities import RTX_SUPPORTED, parse_backend, parse_targets


def test_every_marker_the_table_names_is_declared_where_the_plugin_reads_names_in_table_order():
    """A dormant session registers the markers by the names ``environment`` declares, without the table."""
    assert list(guards.markers()) == list(environment.MARKERS)


@pytest.mark.parametrize("cap, text", [((7, 5), "7.5"), ((8, 9), "8.9"), ((12, 0), "12.0"), ((12, 1), "12.1")])
def test_format_capability_writes_major_dot_minor(cap, text):
    assert environment.format_capability(cap) == text


@pytest.mark.parametrize("cap", RTX_SUPPORTED, ids=str)
def test_a_written_capability_reads_back_as_itself(cap):
    """What the header and the skip reasons write is what ``--trt-target-sm`` and ``TRTCAP_TARGET_SM`` accept."""
    assert parse_targets(environment.format_capability(cap), warn=False) == (cap,)


def test_every_backend_name_is_accepted_and_nothing_else():
    assert [parse_backend(name) for name in environment.BACKENDS] == ["auto", "rtx", "standard"]
    with pytest.raises(ValueError, match=environment.ENV_BACKEND):
        parse_backend("cuda")
