"""The node checks the rules table names (``trtcap_guards.node_checks``), called directly: each answers what the
converter it stands for would build (True: the target cannot serve the node), reads dtypes and shapes from
``meta["val"]``, else ``meta["tensor_meta"]``, else from a tensor argument itself, and answers False instead of
raising on whatever else it is handed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from trtcap_guards import node_checks
from trtcap_guards.rules import GEMM_TARGETS

MM = GEMM_TARGETS["aten.mm.default"]  # ((0, "self"), (1, "mat2"))
CDIST = ((0, "x1"), (1, "x2"))
CONV = ((0, "input"),)


def node(*args, meta=None, **kwargs):
    """An fx-node-like object: the checks read only ``args``, ``kwargs`` and ``meta``."""
    return SimpleNamespace(args=args, kwargs=kwargs, meta={} if meta is None else meta)


def operand(dtype, shape=(4, 4), where="val"):
    """An fx-node-like operand whose example value sits in ``meta[where]``."""
    return SimpleNamespace(meta={where: torch.empty(shape, dtype=dtype)})


@pytest.mark.parametrize(
    "dtype, fp32, fp16",
    [(torch.float32, True, False), (torch.float64, True, False), (torch.float16, False, True),
     (torch.bfloat16, False, False)],
    ids=["fp32", "fp64", "fp16", "bf16"],
)
def test_the_gemm_operand_checks_follow_the_operands_dtype(dtype, fp32, fp16):
    """FP64 counts as FP32: TensorRT has no double, Torch-TensorRT hands FP64 tensors to it as FP32."""
    mm = node(operand(torch.bfloat16), operand(dtype))  # the second operand decides here
    assert node_checks.fp32_operand(mm, MM) is fp32
    assert node_checks.fp16_operand(mm, MM) is fp16


def test_an_operand_given_by_keyword_counts_and_an_unlisted_one_does_not():
    assert node_checks.fp32_operand(node(operand(torch.float16), mat2=operand(torch.float32)), MM) is True
    assert node_checks.fp32_operand(node(operand(torch.float16), operand(torch.float32)), ((0, "self"),)) is False


def test_dtypes_come_from_val_then_tensor_meta_then_nowhere():
    assert node_checks.fp32_operand(node(operand(torch.float32, where="tensor_meta"), operand(torch.float16)), MM)
    # meta["val"] wins over a tensor_meta that says otherwise
    both = SimpleNamespace(meta={"val": torch.empty(2, 2, dtype=torch.float16),
                                 "tensor_meta": torch.empty(2, 2, dtype=torch.float32)})
    assert node_checks.fp32_operand(node(both, both), MM) is False
    assert node_checks.fp32_operand(node(SimpleNamespace(meta={}), SimpleNamespace(meta={})), MM) is False
    assert node_checks.fp32_operand(node(torch.empty(2, 2), torch.empty(2, 2)), MM) is True  # a tensor argument


@pytest.mark.parametrize(
    "p, mode, rows, matmul",
    [(2.0, 1, 5, True), (2.0, None, 26, True), (2.0, 0, 26, True), (2.0, None, 25, False), (2.0, 0, 25, False),
     (2.0, 2, 30, False), (1.0, 1, 30, False), (True, 1, 30, False), (2.0, True, 30, False)],
)
def test_cdist_emits_matmul_follows_the_converter_s_branch(p, mode, rows, matmul):
    """The cdist converter builds a matrix multiply for p == 2 with mode 1, or mode 0/None over 25 rows."""
    cdist = node(operand(torch.float32, (rows, 4)), operand(torch.float32, (6, 4)), p, mode)
    assert node_checks.cdist_emits_matmul(cdist, CDIST) is matmul


def test_cdist_rows_of_the_second_operand_or_unknown_rows_count():
    assert node_checks.cdist_emits_matmul(node(operand(torch.float32, (5, 4)), operand(torch.float32, (40, 4)),
                                               2.0, None), CDIST) is True
    unknown = SimpleNamespace(meta={"val": SimpleNamespace(dtype=torch.float32, shape=("s0", 4))})
    assert node_checks.cdist_emits_matmul(node(unknown, operand(torch.float32, (6, 4)), 2.0, None), CDIST) is True


@pytest.mark.parametrize(
    "shape, transposed, forward_3d",
    [((1, 2, 4, 4, 4), False, True), ((1, 2, 4, 4, 4), True, False), ((1, 2, 4, 4), False, False)],
)
def test_forward_conv3d_is_a_5d_input_not_transposed(shape, transposed, forward_3d):
    conv = node(operand(torch.float32, shape), None, None, [1], [0], [1], transposed)
    assert node_checks.forward_conv3d(conv, CONV) is forward_3d


def test_bf16_anywhere_looks_at_outputs_and_nested_inputs():
    bf16 = torch.empty(2, dtype=torch.bfloat16)
    assert node_checks.bf16_anywhere(node(meta={"val": (torch.empty(2), bf16)}), ()) is True
    assert node_checks.bf16_anywhere(node([[operand(torch.bfloat16)]]), ()) is True
    assert node_checks.bf16_anywhere(node(scale={"a": operand(torch.bfloat16)}), ()) is True
    assert node_checks.bf16_anywhere(node(operand(torch.float32), meta={"val": torch.empty(2)}), ()) is False


ODD = {  # named: a repr with an address would differ between xdist workers
    "None": None, "object": object(), "int": 42, "text": "text",
    "fields of the wrong types": SimpleNamespace(args="text", kwargs=[], meta="meta"),
    "no arguments, an object as its value": SimpleNamespace(args=(), kwargs={}, meta={"val": object()}),
    "arguments that are no nodes": node(object(), None, "2", None),
}
CHECKS = [(node_checks.fp32_operand, MM), (node_checks.fp16_operand, MM), (node_checks.cdist_emits_matmul, CDIST),
          (node_checks.forward_conv3d, CONV), (node_checks.bf16_anywhere, ())]


@pytest.mark.parametrize("odd", list(ODD.values()), ids=list(ODD))
@pytest.mark.parametrize("check, operands", CHECKS, ids=[check.__name__ for check, _ in CHECKS])
def test_whatever_they_are_handed_they_answer_false(check, operands, odd):
    assert check(odd, operands) is False
