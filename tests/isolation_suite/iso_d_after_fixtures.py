"""Runs after iso_c_fixtures.py: every fixture's leak was restored when its scope ended, not before."""

import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS


def test_only_the_live_session_fixture_remains():
    assert not [e for e in ATOMIC_SUBGRAPHS if e[0].__name__.endswith("Leak")]
    assert torch.ops.aten.erfinv.default in DYNAMO_ATEN_CONVERTERS  # the session fixture is still alive
