"""The inventory of Torch-TensorRT's process-wide state covers what the installed package really mutates, agrees
with what isolation holds, and is what docs/plugin.md lists."""

from __future__ import annotations

import importlib
import importlib.machinery
import textwrap
from pathlib import Path
from typing import Any, List

import pytest
from state_scan import Mutation, scan

from pytest_trtcap.isolation import held_state, inventory

PLUGIN_DOC = (Path(__file__).parent.parent / "docs" / "plugin.md").read_text(encoding="utf-8")


def _uncovered(mutations: List[Mutation]) -> List[str]:
    return sorted({f"{m.module}.{m.name} ({m.how} in {m.where})" for m in mutations
                   if not inventory.covers(m.module, m.name)})


@pytest.fixture(scope="module")
def installed() -> List[Mutation]:
    # PathFinder, not importlib.util.find_spec: nothing here imports torch_tensorrt
    spec = importlib.machinery.PathFinder.find_spec("torch_tensorrt")
    if spec is None:
        pytest.skip("torch_tensorrt is not installed")
    return scan(list(spec.submodule_search_locations)[0], "torch_tensorrt")


def test_every_registry_the_installed_package_mutates_is_in_the_inventory(installed: List[Mutation]) -> None:
    assert _uncovered(installed) == [], ("held by isolation or listed with a reason in "
                                         "pytest_trtcap/isolation/inventory.py")


@pytest.mark.parametrize("module, name", [
    ("torch_tensorrt.dynamo.partitioning._atomic_subgraphs", "ATOMIC_SUBGRAPHS"),
    ("torch_tensorrt.dynamo.conversion._ConverterRegistry", "DYNAMO_ATEN_CONVERTERS"),
    ("torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass", "ATEN_POST_LOWERING_PASSES"),
    ("torch_tensorrt.runtime._cudagraphs", "_PY_RT_CUDAGRAPHS"),
])
def test_the_scan_finds_the_registries_known_to_leak(installed: List[Mutation], module: str, name: str) -> None:
    assert any(m.module == module and m.name == name for m in installed)


def test_a_new_release_with_a_new_registry_fails_naming_it(tmp_path: Path) -> None:
    pkg = tmp_path / "torch_tensorrt"
    (pkg / "dynamo").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "dynamo" / "__init__.py").write_text("")
    (pkg / "dynamo" / "_new_registry.py").write_text(textwrap.dedent("""
        from typing import Dict
        NEW_HOOKS: Dict[str, object] = {}
        _MODE = False
        CONSTANT = {"read": "only"}

        def register_hook(name, fn):
            NEW_HOOKS[name] = fn

        def set_mode(on):
            global _MODE
            _MODE = on
    """))
    (pkg / "dynamo" / "user.py").write_text(textwrap.dedent("""
        from ._new_registry import NEW_HOOKS
        from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS

        def drop(name):
            NEW_HOOKS.pop(name)
    """))
    assert _uncovered(scan(str(pkg), "torch_tensorrt")) == [
        "torch_tensorrt.dynamo._new_registry.NEW_HOOKS (.pop() in torch_tensorrt.dynamo.user:drop)",
        "torch_tensorrt.dynamo._new_registry.NEW_HOOKS ([...] = in torch_tensorrt.dynamo._new_registry:register_hook)",
        "torch_tensorrt.dynamo._new_registry._MODE (global rebound in torch_tensorrt.dynamo._new_registry:set_mode)",
    ]


def test_held_entries_and_isolation_specs_agree() -> None:
    specs = [spec.label for spec in held_state.builtin_specs()]
    assert sorted(inventory.held_labels()) == sorted(specs)


def test_every_entry_not_held_says_why_and_every_held_one_does_not() -> None:
    for entry in inventory.INVENTORY:
        assert bool(entry.reason) == (entry.held_by is None), entry


def _resolve(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


@pytest.mark.parametrize("entry", [e for e in inventory.INVENTORY if e.module.startswith("torch_tensorrt")],
                         ids=lambda e: e.name)
def test_every_entry_names_real_state_of_the_installed_release(tt: Any, entry: inventory.StateEntry) -> None:
    module = importlib.import_module(entry.module)
    _resolve(module, entry.name)  # AttributeError names what the release no longer has
    assert tt.__version__.startswith(inventory.SUPPORTED_RELEASES)


def test_the_plugin_docs_list_exactly_the_inventory() -> None:
    start = PLUGIN_DOC.index("<!-- isolation-inventory:start -->") + len("<!-- isolation-inventory:start -->")
    end = PLUGIN_DOC.index("<!-- isolation-inventory:end -->")
    assert PLUGIN_DOC[start:end].strip().splitlines() == inventory.readme_lines(), (
        "docs/plugin.md out of step; paste what this prints: "
        "python -c \"from pytest_trtcap.isolation.inventory import readme_lines; print(chr(10).join(readme_lines()))\"")
