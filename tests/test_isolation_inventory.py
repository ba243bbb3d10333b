"""The inventory of Torch-TensorRT's process-wide state covers what the installed package really mutates, agrees
with what isolation holds, and is what docs/plugin.md lists."""

from __future__ import annotations

import importlib
import importlib.machinery
import textwrap
from pathlib import Path
from typing import Any

import isolation_inventory as inventory
import pytest
from state_scan import Mutation, scan

from pytest_trtcap.isolation import held_state
from pytest_trtcap.isolation.drive import environment_spec

PLUGIN_DOC = (Path(__file__).parent.parent / "docs" / "plugin.md").read_text(encoding="utf-8")


def _uncovered(mutations: list[Mutation]) -> list[str]:
    return sorted({f"{m.module}.{m.name} ({m.how} in {m.where})" for m in mutations
                   if not inventory.covers(m.module, m.name)})


@pytest.fixture(scope="module")
def installed() -> list[Mutation]:
    # PathFinder, not importlib.util.find_spec: nothing here imports torch_tensorrt
    spec = importlib.machinery.PathFinder.find_spec("torch_tensorrt")
    if spec is None:
        pytest.skip("torch_tensorrt is not installed")
    return scan(list(spec.submodule_search_locations)[0], "torch_tensorrt")


def test_every_registry_the_installed_package_mutates_is_in_the_inventory(installed: list[Mutation]) -> None:
    assert _uncovered(installed) == [], ("held by isolation or listed with a reason in "
                                         "tests/isolation_inventory.py")


@pytest.mark.parametrize("module, name", [
    ("torch_tensorrt.dynamo.partitioning._atomic_subgraphs", "ATOMIC_SUBGRAPHS"),
    ("torch_tensorrt.dynamo.conversion._ConverterRegistry", "DYNAMO_ATEN_CONVERTERS"),
    ("torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass", "ATEN_POST_LOWERING_PASSES"),
    ("torch_tensorrt.runtime._cudagraphs", "_PY_RT_CUDAGRAPHS"),
])
def test_the_scan_finds_the_registries_known_to_leak(installed: list[Mutation], module: str, name: str) -> None:
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
    specs = [spec.label for spec in held_state.builtin_specs()] + [environment_spec().label]
    assert sorted(inventory.held_labels()) == sorted(specs)


def test_every_entry_not_held_says_why_and_every_held_one_does_not() -> None:
    for entry in inventory.INVENTORY:
        assert bool(entry.reason) == (entry.held_by is None), entry


def _resolve(module: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        module = getattr(module, part)
    return module


def _release(version: str) -> str:
    """``2.11`` of ``2.11.0+cu130``: the release an inventory entry lists."""
    return ".".join(version.split("+")[0].split(".")[:2])


def _lacks(entry: inventory.StateEntry) -> bool:
    """Whether the installed package has no such module or attribute (a missing dependency is not that)."""
    try:
        _resolve(importlib.import_module(entry.module), entry.name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (entry.module == exc.name or entry.module.startswith(exc.name + ".")):
            raise
        return True
    except AttributeError:
        return True
    return False


@pytest.mark.parametrize("entry", [e for e in inventory.INVENTORY if e.module.startswith("torch_tensorrt")],
                         ids=lambda e: e.name)
def test_every_entry_names_real_state_of_the_installed_release(tt: Any, entry: inventory.StateEntry) -> None:
    """Each entry names state every release it lists has, and that the releases it leaves out lack: a release
    missing what the inventory says it has (a registry renamed or moved) fails, naming it, and so does a release
    holding what the inventory says it lacks."""
    release = _release(tt.__version__)
    assert release in inventory.SUPPORTED_RELEASES, f"torch_tensorrt {tt.__version__} is not a supported release"
    if release in entry.releases:
        _resolve(importlib.import_module(entry.module), entry.name)  # the error names what the release lacks
    else:
        assert _lacks(entry), f"torch_tensorrt {release} has {entry.module}.{entry.name}: list it in its releases"


def test_the_inventory_speaks_of_exactly_the_releases_the_rtx_extra_allows() -> None:
    import tomllib  # Python 3.11+
    from packaging.requirements import Requirement

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (spec,) = [Requirement(r).specifier for r in project["optional-dependencies"]["rtx"]
               if r.startswith("torch-tensorrt-rtx")]
    allowed = tuple(f"2.{minor}" for minor in range(100) if spec.contains(f"2.{minor}.0"))
    assert allowed == inventory.SUPPORTED_RELEASES


def test_every_entry_lists_some_supported_releases_and_no_other() -> None:
    for entry in inventory.INVENTORY:
        assert entry.releases and set(entry.releases) <= set(inventory.SUPPORTED_RELEASES), entry


def test_the_plugin_docs_list_exactly_the_inventory() -> None:
    start = PLUGIN_DOC.index("<!-- isolation-inventory:start -->") + len("<!-- isolation-inventory:start -->")
    end = PLUGIN_DOC.index("<!-- isolation-inventory:end -->")
    assert PLUGIN_DOC[start:end].strip().splitlines() == inventory.readme_lines(), (
        "docs/plugin.md out of step; paste what this prints: "
        "python tests/isolation_inventory.py")
