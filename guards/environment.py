"""The names every part of the project shares without loading anything: the environment variables the guards
read, the backend names, and how a compute capability is written.

Apart from ``capabilities`` and ``targets`` so the pytest plugin can declare its settings and register its markers
(which mirror these) without loading the parsing or the predicate: the plugin loads in every pytest run of an
environment.
"""

from typing import Tuple

ENV_TARGETS = "TRTCAP_TARGET_SM"
ENV_BACKEND = "TRTCAP_BACKEND"
BACKENDS = ("auto", "rtx", "standard")

Capability = Tuple[int, int]

TURING: Capability = (7, 5)


def format_capability(cap: Capability) -> str:
    """``7.5`` for ``(7, 5)``."""
    return f"{cap[0]}.{cap[1]}"
