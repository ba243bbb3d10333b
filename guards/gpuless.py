"""Import Torch-TensorRT on a host without a CUDA device.

``import torch_tensorrt`` 2.14 asks ``torch.cuda.get_device_capability()`` and ``torch.cuda.current_device()``
while importing, and both raise without a driver. Where (and only where) no CUDA device exists, those two
queries are answered - the capability with the first declared target - and the fact is recorded so reports
can say so. Decisions never read these answers: the host fallback checks ``torch.cuda.is_available()``.
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

from .environment import Capability
from .environment import format_capability as _format
from .process_state import STATE

#: Answered when nothing is declared: a TensorRT-RTX capability that no import-time check singles out.
DEFAULT_ANSWER: Capability = (8, 9)


class GpuLessStatus:
    """Whether the import-time device queries were answered, with what, and why (not); one per process.

    A plain class, not a dataclass: the plugin's header reads it in every pytest run that shows one.
    """

    __slots__ = ("applied", "capability", "detail", "at_import")

    def __init__(self) -> None:
        self.applied = False
        self.capability: Capability | None = None
        self.detail = "not attempted"
        self.at_import: Capability | None = None  # what the import itself was answered, where targets came later

    def __repr__(self) -> str:
        return (f"GpuLessStatus(applied={self.applied!r}, capability={self.capability!r}, detail={self.detail!r}, "
                f"at_import={self.at_import!r})")

    def describe(self) -> str:
        if self.applied and self.capability is not None:
            earlier = ""
            if self.at_import not in (None, self.capability):
                earlier = f"; {_format(self.at_import)} during the import, before the targets were known"
            return f"applied (device queries answered with {_format(self.capability)}{earlier})"
        return self.detail


def status() -> GpuLessStatus:
    """The record of what was answered (``STATE.gpu_less``; one per process, made when first asked for)."""
    if STATE.gpu_less is None:
        STATE.gpu_less = GpuLessStatus()
    record: GpuLessStatus = STATE.gpu_less
    return record


def answer_device_queries(capability: Capability | None = None) -> bool:
    """Answer the two import-time device queries if no CUDA device exists; True if it did."""
    import torch

    if capability is not None:  # checked first: a bad answer is refused whatever has been answered already
        from .capabilities import check_pair

        capability = check_pair(capability, "answer_device_queries")
    record = status()
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


def follow_targets(capability: Capability | None) -> None:
    """Answer later device queries with ``capability``: targets that became known only after the import
    (a conftest imports torch_tensorrt before its own ``pytest_trtcap_target_capabilities`` could answer)."""
    record = status()
    if not record.applied or capability is None or capability == record.capability:
        return
    if record.at_import is None:
        record.at_import = record.capability
    record.capability = (int(capability[0]), int(capability[1]))
    record.detail = f"applied ({_format(record.capability)})"


def import_torch_tensorrt(capability: Capability | None = None) -> ModuleType:
    """``import torch_tensorrt``, answering its device queries first where no CUDA device exists."""
    module = sys.modules.get("torch_tensorrt")
    if module is not None:
        return module
    answer_device_queries(capability)
    import torch_tensorrt

    return torch_tensorrt
