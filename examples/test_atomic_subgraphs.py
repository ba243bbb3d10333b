"""Registering an atomic subgraph changes module-level state that the resource partitioner reads.

The test undoes its registration; if it did not (say it failed first), the plugin would restore
``ATOMIC_SUBGRAPHS`` and name this test in its ``trtcap`` summary instead of letting later tests fail.
"""

import torch
from torch_tensorrt.dynamo.partitioning import _atomic_subgraphs
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph


class LinearReLU(torch.nn.Module):
    def forward(self, x, weight, bias):
        return torch.ops.aten.relu.default(torch.ops.aten.linear.default(x, weight, bias))


def test_register_atomic_subgraph():
    before = list(ATOMIC_SUBGRAPHS)
    register_atomic_subgraph(init_args=(), is_core_aten=True)(LinearReLU)
    try:
        assert ATOMIC_SUBGRAPHS[-1] == (LinearReLU, (), True)
        assert len(ATOMIC_SUBGRAPHS) == len(before) + 1
    finally:
        ATOMIC_SUBGRAPHS.remove((LinearReLU, (), True))
        _atomic_subgraphs.trace_atomic_graph.cache_clear()
    assert before == ATOMIC_SUBGRAPHS
