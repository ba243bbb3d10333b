"""Where Torch-TensorRT's converter registry lives, and the two ways to reach it.

The guards install into ``DYNAMO_CONVERTERS``, the review reads it, and the pytest plugin's isolation compares it
around every test: all of them find it here. Most callers must not import Torch-TensorRT to ask (an import costs
seconds and, on a host without CUDA, answers its device queries as a side effect), so the plain look-up only reads
``sys.modules``; this module imports nothing else, cheap enough for the plugin to load and to call for every test.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

REGISTRY_MODULE = "torch_tensorrt.dynamo.conversion._ConverterRegistry"


def loaded_converter_registry() -> Any | None:
    """``DYNAMO_CONVERTERS`` where something imported its module; None where nothing did, or where that import
    failed half-way. Never imports."""
    return getattr(sys.modules.get(REGISTRY_MODULE), "DYNAMO_CONVERTERS", None)


def converter_registry() -> Any:
    """``DYNAMO_CONVERTERS``, importing Torch-TensorRT through the guards (device queries answered where there is
    no CUDA device) when it is not loaded yet: for callers that act on the registry, such as ``install``."""
    from .gpuless import import_torch_tensorrt

    import_torch_tensorrt()
    return importlib.import_module(REGISTRY_MODULE).DYNAMO_CONVERTERS
