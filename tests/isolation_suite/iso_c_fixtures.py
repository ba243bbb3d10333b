"""Leaks made in fixtures' setup and teardown, of every scope, and in setUpClass / tearDownClass."""

import unittest

import pytest
import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

BASE = list(ATOMIC_SUBGRAPHS)


def pattern(name):
    cls = type(name, (torch.nn.Module,), {})
    register_atomic_subgraph(init_args=(), is_core_aten=True)(cls)
    return (cls, (), True)


def names():
    return [entry[0].__name__ for entry in ATOMIC_SUBGRAPHS[len(BASE):]]


@pytest.fixture
def setup_leaker():
    pattern("FunctionSetupLeak")
    yield


@pytest.fixture
def finalizer_leaker(request):
    request.addfinalizer(lambda: pattern("FinalizerLeak"))


@pytest.fixture
def broken_leaker():
    pattern("BrokenSetupLeak")
    raise RuntimeError("setup failed after registering")


@pytest.fixture(scope="module")
def module_leaker():
    pattern("ModuleSetupLeak")
    yield


def test_uses_a_function_fixture_that_leaks(setup_leaker):
    assert names() == ["FunctionSetupLeak"]


def test_uses_a_finalizer_that_leaks(finalizer_leaker):
    assert names() == []


def test_uses_a_fixture_that_fails_after_leaking(broken_leaker):
    pass


def test_first_test_of_the_module_fixture(module_leaker):
    assert names() == ["ModuleSetupLeak"]


def test_module_fixture_still_alive_is_not_restored_away(module_leaker):
    assert names() == ["ModuleSetupLeak"]


def test_uses_the_session_fixture(session_leaker, module_leaker):
    assert names() == ["ModuleSetupLeak"]
    assert torch.ops.aten.erfinv.default in DYNAMO_ATEN_CONVERTERS


class TestSetUpClassLeaks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        pattern("SetUpClassLeak")

    def test_sees_its_class_state(self):
        assert names()[-1] == "SetUpClassLeak"


class TestTearDownClassLeaks(unittest.TestCase):
    @classmethod
    def tearDownClass(cls):
        pattern("TearDownClassLeak")

    def test_runs(self):
        assert "SetUpClassLeak" not in names()
