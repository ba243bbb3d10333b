"""Import Torch-TensorRT on a host without a CUDA device.

``import torch_tensorrt`` 2.14 asks ``torch.cuda.get_device_capability()`` and ``torch.cuda.current_device()``
while importing, and both raise without a driver. Where (and only where) no CUDA device exists, those two
queries are answered - the capability with the first declared target - and the fact is recorded so reports
can say so. Decisions never read these answers: the host fallback checks ``torch.cuda.is_available()``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any, Optional

from .environment import Capability
from .environment import format_capability as _format
from .process_state import STATE, GpuLessStatus

#: Answered when nothing is declared: a TensorRT-RTX capability that no import-time check singles out.
DEFAULT_ANSWER: Capability = (8, 9)


def status() -> GpuLessStatus:
    """The record of what was answered (``STATE.gpu_less``; one per process)."""
    return STATE.gpu_less


def answer_device_queries(capability: Optional[Capability] = None) -> bool:
    """Answer the two import-time device queries if no CUDA device exists; True if it did."""
    import torch

    if capability is not None:  # checked first: a bad answer is refused whatever has been answered already
        from .capabilities import check_pair

        capability = check_pair(capability, "answer_device_queries")
    record = STATE.gpu_less
    if record.applied:
        return True
    if torch.cuda.is_available():
        record.detail = "not needed (CUDA device present)"
        return False
    if capability is None:
        from .targets import capability_decision

        try:
            declared = capability_decision(probe_host=False).targets
        except ValueError:
            declared = ()
        capability = declared[0] if declared else DEFAULT_ANSWER
    answer = (int(capability[0]), int(capability[1]))

    def get_device_capability(device: Any = None) -> Capability:  # noqa: ARG001 - torch.cuda's signature
        return record.capability or answer  # follow_targets may re-point it

    def current_device() -> int:
        return 0

    get_device_capability.__trtcap_answer__ = True  # type: ignore[attr-defined]
    current_device.__trtcap_answer__ = True  # type: ignore[attr-defined]
    torch.cuda.get_device_capability = get_device_capability
    torch.cuda.current_device = current_device
    record.applied, record.capability = True, answer
    record.detail = f"applied ({_format(answer)})"
    return True


def follow_targets(capability: Optional[Capability]) -> None:
    """Answer later device queries with ``capability``: targets that became known only after the import
    (a conftest imports torch_tensorrt before its own ``pytest_trtcap_target_capabilities`` could answer)."""
    record = STATE.gpu_less
    if not record.applied or capability is None or capability == record.capability:
        return
    if record.at_import is None:
        record.at_import = record.capability
    record.capability = (int(capability[0]), int(capability[1]))
    record.detail = f"applied ({_format(record.capability)})"


def import_torch_tensorrt(capability: Optional[Capability] = None) -> ModuleType:
    """``import torch_tensorrt``, answering its device queries first where no CUDA device exists."""
    module = sys.modules.get("torch_tensorrt")
    if module is not None:
        return module
    answer_device_queries(capability)
    import torch_tensorrt

    return torch_tensorrt
