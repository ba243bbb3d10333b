"""Example Torch-TensorRT-style suite for pytest-trtcap.

Like Torch-TensorRT's own suites, it imports torch_tensorrt at module level. On a host without a CUDA
device that import only works because the plugin answers torch_tensorrt's two import-time device queries
(see the ``trtcap: gpu-less import`` header line). Run it on two arms with ``trtcap sweep``.
"""

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch_tensorrt  # noqa: F401  (module-level, as real suites do)
from torch_tensorrt.dynamo import partitioning
from torch_tensorrt.dynamo._settings import CompilationSettings
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS
from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering


def lower(model: torch.nn.Module, *inputs: torch.Tensor) -> Any:
    """Export and lower a model the way ``torch_tensorrt.dynamo.compile`` does."""
    settings = CompilationSettings(min_block_size=1)
    exported = torch.export.export(model.eval(), tuple(inputs))
    exported = exported.run_decompositions(get_decompositions(False))
    DYNAMO_CONVERTERS.set_compilation_settings(settings)
    return post_lowering(exported.module(), settings)


@pytest.fixture
def device() -> torch.device:
    """Where models and inputs live: the CUDA device where one exists (a GPU runner), else the CPU.

    On a GPU host a model left on the CPU exports CPU-only kernels (SDPA lowers to
    ``_scaled_dot_product_flash_attention_for_cpu``, which no converter serves), so the examples follow the device.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def partition() -> Callable[..., Any]:
    """``partition(model, *inputs)`` -> the module split into ``_run_on_acc*`` / ``_run_on_gpu*`` blocks."""

    def run(model: torch.nn.Module, *inputs: torch.Tensor) -> Any:
        partitioned, _ = partitioning.fast_partition(lower(model, *inputs), min_block_size=1)
        return partitioned

    return run
