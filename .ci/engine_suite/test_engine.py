"""A small compile suite for the engine half of the layer audit on a CUDA host (``.ci/layer_audit_gpu.sh``): an FP32
and an FP16 MLP and a 3D convolution, compiled by Torch-TensorRT on the device; under ``--trtcap-audit-layers`` every
engine they build is read with DETAILED verbosity and judged at the declared targets."""

import pytest
import torch
import torch_tensorrt


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_compile_mlp(dtype):
    model, x = MLP().eval().cuda().to(dtype), torch.randn(4, 16, device="cuda", dtype=dtype)
    compiled = torch_tensorrt.dynamo.compile(torch.export.export(model, (x,)), arg_inputs=[x], min_block_size=1)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-2, atol=1e-2)


def test_compile_conv3d():
    model = torch.nn.Conv3d(3, 8, 3).eval().cuda()
    x = torch.randn(1, 3, 6, 8, 8, device="cuda")
    compiled = torch_tensorrt.dynamo.compile(torch.export.export(model, (x,)), arg_inputs=[x], min_block_size=1)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-2, atol=1e-2)
