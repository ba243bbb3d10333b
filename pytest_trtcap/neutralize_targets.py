"""``--trtcap-neutralize``: switch guards off only for targets the installed Torch-TensorRT really registers.

A typo (``ATEN.LINEAR.DEFAULT``, ``aten.linaer.default``) would otherwise neutralize nothing while the summary
claimed it had. The converter registry is the list of real targets; it is read where the suite has imported
Torch-TensorRT: at configure when a conftest already did, else once collection is done (before the first test).
Nothing here imports it, except in an xdist controller given names to neutralize: only its workers collect, and a
worker cannot stop the session cleanly, so the controller imports Torch-TensorRT (as the workers will) to read
the registry before it starts them. Where no test ever imports it, only the names' case is checked (against the
rules).
"""

from __future__ import annotations

import difflib
import importlib
from contextlib import ExitStack
from typing import Dict, Iterable, Optional

import pytest

import trtcap_guards as guards


def registered_targets() -> Optional[Dict[str, str]]:
    """Lower-cased name -> name of every converter target; None while the registry is not imported."""
    from trtcap_guards.live_registry import loaded_converter_registry

    registry = loaded_converter_registry()
    if registry is None:
        return None
    from trtcap_guards.registry import registry_dicts
    from trtcap_guards.rules import target_name_of

    names = {target_name_of(t) for table in registry_dicts(registry) for t in table}
    return {name.lower(): name for name in names}


def check(names: Iterable[str], source: str, known: Dict[str, str], what: str) -> None:
    """UsageError naming the first name not in ``known`` and the nearest ones that are."""
    for name in names:
        if name in known.values():
            continue
        nearest = [known[n] for n in difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.6)]
        raise pytest.UsageError(
            f"trtcap: {source}: {name!r} is not a converter target {what}; "
            f"nearest: {', '.join(nearest) or 'none close'}"
        )


def _case_slips(names: Iterable[str], source: str) -> None:
    """Before the registry can be read: a rule's target in other letter case is surely a slip."""
    rules = {name.lower(): name for name in guards.explicit_targets()}
    slips = [name for name in names if name.lower() in rules and name not in rules.values()]
    check(slips, source, rules, "(converter targets are lower case)")


def enter(stack: ExitStack, names: Iterable[str], source: str) -> None:
    """Neutralize each name for the session (undone by ``stack``); UsageError naming an unknown one first."""
    names = tuple(names)
    known = registered_targets()
    if known is not None:
        check(names, source, known, "of the installed Torch-TensorRT")
    else:
        _case_slips(names, source)
    for name in names:
        try:
            stack.enter_context(guards.neutralize(name))
        except ValueError as exc:
            raise pytest.UsageError(f"trtcap: {source}: {exc}") from None


def check_after_collection(names: Iterable[str], source: str) -> None:
    """Before the first test: the suite may have imported Torch-TensorRT while collecting."""
    known = registered_targets()
    if known is not None:
        check(names, source, known, "of the installed Torch-TensorRT")


def check_in_xdist_controller(names: Iterable[str], source: str) -> None:
    """Before the workers start: read the registry here, importing Torch-TensorRT as the suite will."""
    if registered_targets() is None:
        try:  # through the plugin's import hook, so --trtcap-gpu-less-import is respected here too
            importlib.import_module("torch_tensorrt")
        except Exception:  # not importable here (no GPU and the GPU-less import off, say): the workers will tell
            return
    check_after_collection(names, source)
