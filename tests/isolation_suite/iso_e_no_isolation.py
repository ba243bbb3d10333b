"""Issue 15: a later isolated test that cleans up an opted-out test's change is not a leak."""

import pytest
import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS, dynamo_tensorrt_converter

RELU = torch.ops.aten.relu.default
STOCK = list(DYNAMO_ATEN_CONVERTERS[RELU])


def opted_out_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


@pytest.mark.trtcap_no_isolation
def test_opted_out_registers_a_converter():
    dynamo_tensorrt_converter(RELU)(opted_out_converter)


def test_isolated_test_cleans_it_up():
    entries = DYNAMO_ATEN_CONVERTERS[RELU]
    entries[:] = [e for e in entries if e.converter_implementation is not opted_out_converter]


def test_the_clean_up_was_kept():
    assert DYNAMO_ATEN_CONVERTERS[RELU] == STOCK
