"""The names every part of the project shares without loading anything: the environment variables the guards
read, the backend names, the capability markers' names, and how a compute capability is written.

Apart from ``capabilities`` and ``targets`` so the pytest plugin can declare its settings and register its markers
(which mirror these) without loading the parsing or the predicate: the plugin loads in every pytest run of an
environment.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""


ENV_TARGETS = "TRTCAP_TARGET_SM"
ENV_BACKEND = "TRTCAP_BACKEND"
BACKENDS = ("auto", "rtx", "standard")

#: The capability markers, in the order of the rules table (``rules.RULES``), whose rules name them here.
FP32_GEMM, CDIST_MATMUL, CONV3D, BF16 = MARKERS = ("trt_fp32_gemm", "trt_cdist_matmul", "trt_conv3d", "trt_bf16")

Capability = tuple[int, int]

TURING: Capability = (7, 5)


def format_capability(cap: Capability) -> str:
    """``7.5`` for ``(7, 5)``."""
    return f"{cap[0]}.{cap[1]}"
