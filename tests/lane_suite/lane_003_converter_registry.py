"""Converter-registry changes next to the suite's own reset fixture.

``test_000`` registers a converter and leaves it: the conftest's ``reset_torch_tensorrt_state`` covers the
registry, so the suite itself is not hurt (``test_001`` sees the registry as it was) - but the test still leaked.
``test_002`` uses a fixture that registers a converter for the test's duration and removes it in its own
teardown; that is not a leak, and nothing may restore it from under the fixture.
"""

import unittest

import pytest
import torch
import torch_tensorrt as torchtrt  # noqa: F401  (module level, as Torch-TensorRT's test modules do)
from torch_tensorrt.dynamo.conversion._ConverterRegistry import (
    DYNAMO_ATEN_CONVERTERS,
    ConverterPriority,
    dynamo_tensorrt_converter,
)

RELU = torch.ops.aten.relu.default
STOCK_RELU = list(DYNAMO_ATEN_CONVERTERS[RELU])


def lane_relu_converter(ctx, target, args, kwargs, name):  # never called: nothing is converted here
    raise NotImplementedError


@pytest.fixture
def scoped_relu_converter():
    """Registers a high-priority ReLU converter for one test; removes exactly that entry afterwards."""
    dynamo_tensorrt_converter(RELU, priority=ConverterPriority.HIGH)(lane_relu_converter)
    support = DYNAMO_ATEN_CONVERTERS[RELU][0]
    yield support
    DYNAMO_ATEN_CONVERTERS[RELU].remove(support)  # ValueError if someone restored it away already


class TestConverterRegistry(unittest.TestCase):
    def test_000_registers_a_converter_and_leaves_it(self):
        dynamo_tensorrt_converter(RELU, priority=ConverterPriority.HIGH)(lane_relu_converter)
        self.assertIs(DYNAMO_ATEN_CONVERTERS[RELU][0].converter_implementation, lane_relu_converter)

    def test_001_registry_is_as_before(self):
        self.assertEqual(DYNAMO_ATEN_CONVERTERS[RELU], STOCK_RELU)

    @pytest.mark.usefixtures("scoped_relu_converter")
    def test_002_fixture_scoped_converter(self):
        self.assertIs(DYNAMO_ATEN_CONVERTERS[RELU][0].converter_implementation, lane_relu_converter)
        self.assertEqual(len(DYNAMO_ATEN_CONVERTERS[RELU]), len(STOCK_RELU) + 1)

    def test_003_registry_is_as_before(self):
        self.assertEqual(DYNAMO_ATEN_CONVERTERS[RELU], STOCK_RELU)


if __name__ == "__main__":
    unittest.main()
