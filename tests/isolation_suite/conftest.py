"""Conftest of the isolation scenarios (run by tests/test_isolation.py in a subprocess, never directly)."""

import pytest

import user_state


def pytest_trtcap_isolated_state(config):
    def snapshot():
        return list(user_state.CACHE)

    def restore(saved):
        user_state.CACHE[:] = saved

    def restore_flag(saved):
        user_state.FLAG = saved

    return [("user cache", snapshot, restore), ("user flag", lambda: user_state.FLAG, restore_flag)]


def session_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


@pytest.fixture(scope="session")
def session_leaker():
    """Registers a converter for the session and never removes it: named when the session ends.

    First requested while a module fixture is alive, so it ends after that module fixture although it started
    later; it changes another held object than that module fixture, so both are still checked.
    """
    import torch
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import dynamo_tensorrt_converter

    dynamo_tensorrt_converter(torch.ops.aten.erfinv.default)(session_converter)
    yield
