"""pytest-trtcap: capability-aware fixtures, markers and leak-proof isolation for Torch-TensorRT suites."""
