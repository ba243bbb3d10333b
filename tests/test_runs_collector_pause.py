"""The collector pause used by record loading and comparison always puts the collector back as it was."""

import gc

import pytest

from pytest_trtcap.runs.record import gc_paused


def test_paused_inside_and_enabled_after_even_when_the_block_raises():
    assert gc.isenabled()
    with pytest.raises(KeyError), gc_paused():
        assert not gc.isenabled()
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
