"""Leaks of every held registry, each followed by a test that must see the state as before."""

import unittest

import pytest
import torch
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (
    DYNAMO_ATEN_CONVERTERS,
    DYNAMO_CONVERTERS,
    dynamo_tensorrt_converter,
)
from torch_tensorrt.dynamo.lowering import _decomposition_groups as groups
from torch_tensorrt.dynamo.lowering._decompositions import register_torch_trt_decomposition
from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import (
    ATEN_POST_LOWERING_PASSES,
    ATEN_PRE_LOWERING_PASSES,
    _aten_lowering_pass,
)
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

try:  # 2.14's; 2.11 to 2.13 have no constant-fold exclusion rules
    from torch_tensorrt.dynamo.lowering.constant_fold_exclusions import _core as fold_exclusions
except ModuleNotFoundError:
    fold_exclusions = None

import user_state

aten = torch.ops.aten
BASE_ATOMIC = list(ATOMIC_SUBGRAPHS)
BASE_CONVERTERS = {k: list(v) for k, v in DYNAMO_ATEN_CONVERTERS.items()}
BASE_REGISTRIES = list(DYNAMO_CONVERTERS.registries)
BASE_PRE, BASE_POST = list(ATEN_PRE_LOWERING_PASSES.passes), list(ATEN_POST_LOWERING_PASSES.passes)
BASE_TRT_DECOMPOSITIONS = dict(groups.TORCH_TRT_DECOMPOSITIONS)
BASE_ENABLED = dict(groups.ENABLED_TORCH_DECOMPOSITIONS)
HELD_SETTINGS = CompilationSettings()
DYNAMO_CONVERTERS.set_compilation_settings(HELD_SETTINGS)  # at collection: the settings every test starts from
assert aten.relu.default not in BASE_TRT_DECOMPOSITIONS and aten.erfinv.default not in BASE_CONVERTERS


class ReLUConv(torch.nn.Module):
    def forward(self, x):
        return aten.relu.default(x)


class ReLUConvFail(ReLUConv):
    pass


def fake_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


def my_pass(gm, settings):
    return gm


def my_pre_pass(gm, settings):
    return gm


def test_leaks_an_atomic_subgraph():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)


def test_leaks_a_converter():
    dynamo_tensorrt_converter(aten.mm.default)(fake_converter)
    dynamo_tensorrt_converter(aten.erfinv.default)(fake_converter)


def test_fails_after_leaking():
    register_atomic_subgraph(init_args=(aten.relu.default,), is_core_aten=True)(ReLUConvFail)
    assert False, "failed before removing its atomic subgraph"


def test_raises_after_leaking():
    dynamo_tensorrt_converter(aten.bmm.default)(fake_converter)
    raise RuntimeError("raised before removing its converter")


def test_changes_compilation_settings():
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings(torch_executed_ops={aten.relu.default}))


def test_edits_the_held_settings_in_place():
    DYNAMO_CONVERTERS.compilation_settings.use_fp32_acc = True


def test_edits_the_held_settings_then_rebinds_them():
    DYNAMO_CONVERTERS.compilation_settings.workspace_size = 123
    DYNAMO_CONVERTERS.set_compilation_settings(CompilationSettings())


def test_the_held_settings_are_as_before():
    assert DYNAMO_CONVERTERS.compilation_settings is HELD_SETTINGS
    assert (HELD_SETTINGS.use_fp32_acc, HELD_SETTINGS.workspace_size) == (False, 0)


def test_sets_the_user_flag():
    user_state.FLAG = "set"


def test_the_user_flag_is_as_before():
    assert user_state.FLAG is None


def test_adds_a_disallowed_target():
    DYNAMO_CONVERTERS.disallowed_targets.add(aten.sigmoid.default)


def test_rebinds_a_registry_element():
    DYNAMO_CONVERTERS.registries[0] = dict(DYNAMO_CONVERTERS.registries[0])


def test_appends_a_registry_dict():
    DYNAMO_CONVERTERS.registries.append({aten.erfinv.default: []})


def test_leaks_user_state():
    user_state.CACHE.append("compiled engine")


def test_registers_a_lowering_pass():
    _aten_lowering_pass(index=1)(my_pass)


def test_adds_a_pre_lowering_pass():
    ATEN_PRE_LOWERING_PASSES.add_pass_with_index(my_pre_pass, 0)


def test_registers_a_decomposition():
    register_torch_trt_decomposition(aten.relu.default, registry=groups.TORCH_TRT_DECOMPOSITIONS)(lambda x: x)


def test_disables_a_torch_decomposition():
    del groups.ENABLED_TORCH_DECOMPOSITIONS[next(iter(BASE_ENABLED))]


def test_registers_a_constant_fold_exclusion_rule():
    if fold_exclusions is None:
        pytest.skip("this release has no constant-fold exclusion rules")
    fold_exclusions.register_constant_fold_exclusion_rule("my_rule")(lambda gm: [])


@pytest.fixture
def scoped_atomic_subgraph():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)
    yield
    ATOMIC_SUBGRAPHS.remove((ReLUConv, (), True))


def test_fixture_scoped_change_is_not_a_leak(scoped_atomic_subgraph):
    assert ATOMIC_SUBGRAPHS[-1] == (ReLUConv, (), True)


class TestUnittestIsolation(unittest.TestCase):
    def test_leaks(self):
        register_atomic_subgraph(init_args=(), is_core_aten=True)(ReLUConv)


def test_everything_is_as_before():
    assert ATOMIC_SUBGRAPHS == BASE_ATOMIC
    assert {k: list(v) for k, v in DYNAMO_ATEN_CONVERTERS.items()} == BASE_CONVERTERS
    assert DYNAMO_CONVERTERS.registries == BASE_REGISTRIES
    assert DYNAMO_CONVERTERS.registries[0] is DYNAMO_ATEN_CONVERTERS
    assert not DYNAMO_CONVERTERS.disallowed_targets
    assert user_state.CACHE == []
    assert ATEN_PRE_LOWERING_PASSES.passes == BASE_PRE and ATEN_POST_LOWERING_PASSES.passes == BASE_POST
    assert groups.TORCH_TRT_DECOMPOSITIONS == BASE_TRT_DECOMPOSITIONS
    assert groups.ENABLED_TORCH_DECOMPOSITIONS == BASE_ENABLED
    if fold_exclusions is not None:
        fold_exclusions.register_constant_fold_exclusion_rule("my_rule")(lambda gm: [])  # raises if still there
        fold_exclusions.unregister_constant_fold_exclusion_rule("my_rule")
