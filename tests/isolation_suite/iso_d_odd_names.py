"""A leaked name with a line break and a terminal escape: the leak line and the warning stay one line, uncoloured."""

from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import _aten_lowering_pass


def test_registers_an_oddly_named_pass():
    def odd(gm, settings):
        return gm

    odd.__name__ = "odd\ntrtcap: forged line \x1b[31mred"
    _aten_lowering_pass(odd)
