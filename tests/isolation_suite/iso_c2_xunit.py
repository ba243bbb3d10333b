"""xunit-style set-up functions are fixtures too: setup_module leaks, teardown_module does not undo it."""

import torch
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph


class XunitModuleLeak(torch.nn.Module):
    pass


def setup_module(module):
    register_atomic_subgraph(init_args=(), is_core_aten=True)(XunitModuleLeak)


def teardown_module(module):
    pass


def test_sees_the_module_state():
    assert ATOMIC_SUBGRAPHS[-1][0] is XunitModuleLeak
