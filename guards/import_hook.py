"""The import hook: act at the moment ``torch_tensorrt`` is first imported, wherever that happens.

Apart from ``gpuless`` (what is answered, and the record of it) because the pytest plugin arms this hook in every
pytest run of an environment, and most of them never import Torch-TensorRT: only this small module loads with it.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's modules as it imports them, which costs every
pytest run whose bytecode is not cached; this module, loaded in every run, has no assert to rewrite.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

Capability = tuple[int, int]


def _answer(capability: Capability | None) -> None:
    from .gpuless import answer_device_queries

    answer_device_queries(capability)


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any, before: Callable[[], Any], after: list[Callable[[ModuleType], Any]]) -> None:
        self.inner, self.before, self.after = inner, before, after

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def __getattr__(self, name: str) -> Any:
        """Everything else is the real loader's: it stays the package's ``__loader__`` and ``__spec__.loader``,
        through which ``pkgutil.get_data``, ``importlib.resources`` and ``inspect`` reach its files."""
        inner = self.__dict__.get("inner")  # absent in a copy being built: no recursion through this method
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def exec_module(self, module: ModuleType) -> None:
        remove_import_hook()  # the real import is happening: step aside (a find_spec alone must not)
        self.before()
        self.inner.exec_module(module)
        for callback in self.after:
            callback(module)


class _ImportHook(importlib.abc.MetaPathFinder):
    """Arranges the device answers at the moment ``torch_tensorrt`` is first imported, then steps aside."""

    def __init__(self, answer: bool, after: list[Callable[[ModuleType], Any]],
                 capability: Capability | None) -> None:
        self.answer, self.after, self.capability = answer, after, capability

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:  # noqa: ARG002 - MetaPathFinder's signature
        if fullname != "torch_tensorrt":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        capability = self.capability
        before = (lambda: _answer(capability)) if self.answer else (lambda: None)
        spec.loader = _Loader(spec.loader, before, self.after)
        return spec


def install_import_hook(
    answer: bool = True,
    after: list[Callable[[ModuleType], Any]] | None = None,
    capability: Capability | None = None,
) -> bool:
    """Run ``answer_device_queries(capability)`` (if ``answer``), then ``after`` callbacks, when torch_tensorrt is
    imported.

    Imports nothing now. Returns False (and does nothing) if torch_tensorrt is already imported. Bad arguments are
    refused here, not inside that import, far from this call.
    """
    if capability is not None:  # the parsing module loads only here: a plain pytest run arms the hook too
        from .capabilities import check_pair

        capability = check_pair(capability, "install_import_hook")
    after = list(after or ())
    for callback in after:
        if not callable(callback):
            from .capabilities import shown

            raise TypeError(f"install_import_hook: after must be callables, got {shown(callback)}")
    if "torch_tensorrt" in sys.modules:
        return False
    remove_import_hook()
    if not answer:
        from .gpuless import status

        status().detail = "off"
    sys.meta_path.insert(0, _ImportHook(answer, after, capability))
    return True


def remove_import_hook() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _ImportHook)]


def armed_hooks() -> list[Any]:
    """The hooks armed now: a pytest session run inside another (``pytest.main`` in a test) replaces the enclosing
    session's hook with its own, and gives these to ``rearm`` when it ends."""
    return [f for f in sys.meta_path if isinstance(f, _ImportHook)]


def rearm(hooks: list[Any]) -> None:
    """Disarm, then arm ``hooks`` (from ``armed_hooks``) again; where torch_tensorrt was imported meanwhile (under
    the hook that replaced them), call their ``after`` callbacks now instead, as that import would have."""
    remove_import_hook()
    module = sys.modules.get("torch_tensorrt")
    if module is None:
        sys.meta_path[:0] = hooks
        return
    for hook in hooks:
        for callback in hook.after:
            callback(module)
