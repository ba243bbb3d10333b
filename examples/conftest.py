"""Example Torch-TensorRT-style suite for pytest-trtcap.

Like Torch-TensorRT's own suites, it imports torch_tensorrt at module level. On a host without a CUDA
device that import only works because the plugin answers torch_tensorrt's two import-time device queries
(see the ``trtcap: gpu-less import`` header line). Run it on two arms with ``trtcap sweep``. The ``partition``
fixture is the plugin's (``pytest_trtcap.partition``).
"""

import pytest
import torch
import torch_tensorrt  # noqa: F401  (module-level, as real suites do)


@pytest.fixture
def device() -> torch.device:
    """Where models and inputs live: the CUDA device where one exists (a GPU runner), else the CPU.

    ``partition`` exports on the same device, so a test that compares with eager keeps its model and inputs there.
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
