"""Internal: what tools built on the guards need and their users should not, in one place.

The pytest plugin (``pytest_trtcap``) is that tool: it uses the guard library's public names (``trtcap_guards.__all__``)
and, for the rest, only this module (its isolation finds the converter registry and the builder wrapper, its settings
read targets from a hook, its report asks what the builder is told). A test checks that it reaches for nothing else.

No stability promise: these names may change or go in any release, together with the plugin of the same
distribution, which is the only supported user. A name users need belongs in ``__all__`` instead.

Each name is read from its module on first use (PEP 562), as the package's exports are: the plugin imports this
module in every pytest run, and most runs ask it only for the environment variables' names and the first-change
notice. So the plugin also finds here the few public names it needs in those runs (the variables' names, the import
hook), which through the package would load its export table.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Name -> the submodule that defines it. (Plain names and no ``__dir__``: code loaded in every pytest run is kept
#: to what it needs.)
NAMES: dict[str, str] = {
    # the names every part shares (the plugin's settings and markers)
    "BACKENDS": "environment", "ENV_BACKEND": "environment", "ENV_TARGETS": "environment", "MARKERS": "environment",
    "format_capability": "environment",
    # the guards' process state: the notice before its first change, the held snapshot's wording
    "on_first_change": "process_state", "changed": "process_state",
    "initial_state": "state", "describe_changes": "state",
    # importing Torch-TensorRT on a host without a CUDA device
    "install_import_hook": "import_hook", "remove_import_hook": "import_hook", "armed_hooks": "import_hook",
    "rearm": "import_hook", "follow_targets": "gpuless",
    # reading targets and pairs from a tool's own sources
    "coerce_targets": "capabilities", "int_pair": "capabilities", "unsupported_message": "capabilities",
    "host_capabilities": "targets",
    # the converter registry and the builder wrapper the guards install into
    "REGISTRY_MODULE": "live_registry", "converter_registry": "live_registry",
    "loaded_converter_registry": "live_registry", "registry_dicts": "registry", "target_name_of": "rules",
    "INTERPRETER_MODULE": "builder", "POPULATE": "builder", "is_builder_wrapper": "builder",
    "builder_targets_status": "builder",
    # the registry review's line
    "describe_unreviewed": "review",
}

__all__ = sorted(NAMES)


def __getattr__(name: str) -> Any:
    """Read from the module as ``sys.modules`` holds it now, never kept here (see the package's ``__getattr__``)."""
    module = NAMES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)
