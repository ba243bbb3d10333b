"""Converter-level FP32 GEMM tests: they build real TensorRT-RTX engines (ahead of time, no GPU needed).

On Turing these engines would have no execution context, so the whole class is marked ``trt_fp32_gemm``
and skipped there with a reason that names the target and where it came from.
"""

import pytest
import torch
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion import TRTInterpreter
from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs


class MM(torch.nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b)


class BMM(torch.nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


class AddMM(torch.nn.Module):
    def forward(self, bias, a, b):
        return torch.addmm(bias, a, b)


CASES = {
    "mm": (MM(), (torch.randn(4, 8), torch.randn(8, 3))),
    "bmm": (BMM(), (torch.randn(2, 4, 8), torch.randn(2, 8, 3))),
    "addmm": (AddMM(), (torch.randn(3), torch.randn(4, 8), torch.randn(8, 3))),
    "linear": (torch.nn.Linear(8, 3), (torch.randn(4, 8),)),
}


@pytest.mark.trt_fp32_gemm
class TestFP32GemmConverters:
    @pytest.mark.parametrize("name", sorted(CASES))
    def test_builds_fp32_engine(self, name, partition, device):
        model, inputs = CASES[name]
        module, counts = partition(model, *inputs, device=device)
        assert counts == (1, 0)  # the whole GEMM is one TensorRT block, built here as compile would build it
        block = module._run_on_acc_0
        settings = CompilationSettings(min_block_size=1)
        interpreter = TRTInterpreter(block, construct_submodule_inputs(block), compilation_settings=settings)
        interpreter._construct_trt_network_def()
        assert interpreter.ctx.net.num_layers >= 1
        engine = interpreter.builder.build_serialized_network(
            interpreter.ctx.net, interpreter._populate_trt_builder_config(False, None)
        )
        assert engine is not None and engine.nbytes > 0
