"""Capability guards for Torch-TensorRT on TensorRT-RTX.

``import trtcap_guards; trtcap_guards.install()`` makes every op that TensorRT-RTX cannot serve on the declared targets
(FP32 GEMMs, attention, cdist's matmul, 3D convolution, BF16 on Turing) fall back to PyTorch. Importing this
package imports neither torch nor torch_tensorrt; functions import what they need when called.

The folder is ``guards/`` in the repository and installs as ``trtcap_guards``. Imported under any other name
(``import guards`` from a checkout), it refuses at once: a second copy would hold a second, disagreeing set of
declarations, neutralizations and fired counts in the same process.

PYTEST_DONT_REWRITE: the pytest plugin imports this package before any conftest can name it in ``pytest_plugins``,
and pytest would warn that it cannot rewrite asserts it does not have (an error under ``-W error``).
"""

if __name__ != "trtcap_guards":
    raise ImportError(
        f"pytest-trtcap's guard library must be imported as 'trtcap_guards', not {__name__!r} "
        "(install the project, e.g. pip install -e .)"
    )

import importlib
import sys
from types import ModuleType
from typing import Any

#: Every submodule, imported on first access (``trtcap_guards.rules``) like the exports, and on each access answered
#: from ``sys.modules`` (``_Package``); here, not in ``exports``, because ``from trtcap_guards import tooling`` asks
#: for one, and the plugin's import must not load the table.
_SUBMODULES = ("builder", "capabilities", "distributions", "environment", "exports", "gpuless", "import_hook",
               "live_registry", "node_checks", "process_state", "registry", "review", "review_2_14", "rules", "state",
               "targets", "tooling", "undo", "validators")


def __getattr__(name: str) -> Any:
    """Exports are read from their module as ``sys.modules`` holds it now, never kept here: an in-process pytester
    run drops the submodules it loaded, and a kept copy would answer from state nobody declares into any more."""
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)  # never bound here (``_Package``)
    from .exports import EXPORTS

    if name in EXPORTS:
        module, _, attribute = EXPORTS[name].partition(".")
        loaded = sys.modules.get(f"{__name__}.{module}")
        if loaded is None or getattr(loaded.__spec__, "_initializing", False):
            # another thread may be importing it now: import_module waits for that import to finish
            loaded = importlib.import_module(f".{module}", __name__)
        return getattr(loaded, attribute or name)
    if name == "__all__":
        return sorted(EXPORTS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    from .exports import EXPORTS

    return sorted(set(globals()) | set(EXPORTS) | set(_SUBMODULES) | {"__all__"})


class _Package(ModuleType):
    """The package keeps no submodule: the import system binds each one here as it loads, and that copy, once an
    in-process pytester run dropped it from ``sys.modules``, would answer ``from trtcap_guards import targets`` and
    our own modules' ``from . import targets`` when imported again, splitting the guards' state in two. Unbound,
    each is answered by ``__getattr__`` from ``sys.modules``, imported again where it was dropped."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SUBMODULES and value is sys.modules.get(f"{__name__}.{name}"):
            self.__dict__.pop(name, None)  # the import system's binding, or the real one set back over a stand-in
            return
        super().__setattr__(name, value)  # anything else (a test's stand-in) is kept


sys.modules[__name__].__class__ = _Package
