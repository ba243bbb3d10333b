"""No import cycles inside a package, counting every import statement: those inside functions (and under
``TYPE_CHECKING``) too, since a function-level import only hides a cycle until the function first runs. No module
uses another's private names. And the plugin uses only the guard library's declared API: ``trtcap_guards.__all__``
and its one internal module for tools, ``trtcap_guards.tooling``.

Each package folder is read as source (``ast``), never imported: the graph is what the code says, whatever is
loaded already. Only imports between the package's own modules are edges; a cycle is a strongly connected set of
modules, printed with the lines that close it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import NamedTuple

import pytest

import trtcap_guards
from trtcap_guards import tooling

ROOT = Path(__file__).resolve().parent.parent

#: package folder -> the name it is imported as (pytest_trtcap includes its runs/ subpackage).
PACKAGES = {"pytest_trtcap": "pytest_trtcap", "guards": "trtcap_guards"}


class Edge(NamedTuple):
    target: str
    line: int


def _module_names(folder: Path, package: str) -> dict[str, Path]:
    """Dotted name -> file, for every module under ``folder`` (a package's ``__init__`` named as the package)."""
    names = {}
    for path in sorted(folder.rglob("*.py")):
        parts = list(path.relative_to(folder).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join([package, *parts])] = path
    return names


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The package an ``from ... import`` names, relative levels resolved against ``module``."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    keep = len(parts) - node.level + (1 if is_package else 0)
    return ".".join(parts[:keep] + ([node.module] if node.module else []))


def _targets(module: str, is_package: bool, node: ast.AST, names: dict[str, Path]) -> list[str]:
    """What an import statement loads: ``from PKG import MODULE`` the module, ``from MODULE import NAME`` the
    module (PKG's ``__init__`` has run already: the importer is inside it)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = _base(module, is_package, node)
        return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in names else base for alias in node.names]
    return []


def import_graph(folder: Path, package: str) -> dict[str, list[Edge]]:
    """Module -> its imports of the package's own modules (the nearest module each dotted name resolves to)."""
    names = _module_names(folder, package)
    graph: dict[str, list[Edge]] = {}
    for module, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges = graph.setdefault(module, [])
        for node in ast.walk(tree):
            for target in _targets(module, path.name == "__init__.py", node, names):
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != module and Edge(target, node.lineno) not in edges:
                    edges.append(Edge(target, node.lineno))
    return graph


def cycles(graph: dict[str, list[Edge]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def _describe(graph: dict[str, list[Edge]], group: list[str], folder: Path, package: str) -> str:
    inside = set(group)
    lines = []
    for module in group:
        where = _module_names(folder, package)[module].relative_to(ROOT)
        edges = sorted(graph[module], key=lambda e: e.line)
        lines += [f"  {where}:{e.line} imports {e.target}" for e in edges if e.target in inside]
    return "cycle among " + ", ".join(group) + ":\n" + "\n".join(lines)


def _package(tmp_path: Path, **modules: str) -> Path:
    """A package ``pkg`` of the given modules (name -> source), with an empty ``__init__.py``."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, source in modules.items():
        (package / f"{name}.py").write_text(source)
    return package


def test_the_import_graph_reader_sees_imports_inside_functions(tmp_path):
    package = _package(tmp_path, a="from .b import B\n", b="B = 1\n\ndef late():\n    from . import a\n    return a\n")
    graph = import_graph(package, "pkg")
    assert graph["pkg.b"] == [Edge("pkg.a", 4)]
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_a_package_has_no_import_cycle_counting_imports_inside_functions(folder):
    path, package = ROOT / folder, PACKAGES[folder]
    graph = import_graph(path, package)
    assert len(graph) > 1, folder  # the walk found the package's modules: an empty graph would pass vacuously
    found = cycles(graph)
    assert not found, "\n".join(_describe(graph, group, path, package) for group in found)


# --- no module reaches into another's private names ---------------------------------------------------------------


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_reaches(folder: Path, package: str) -> list[str]:
    """``from .other import _name`` and ``other._name`` (``other`` bound to a module of the package), with where."""
    names = _module_names(folder, package)
    found = []
    for module, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(folder.parent)
        modules = set()  # local names bound to a module of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _base(module, path.name == "__init__.py", node)
                for alias in node.names:
                    if f"{base}.{alias.name}" in names:
                        modules.add(alias.asname or alias.name)
                    elif base in names and base != module and _is_private(alias.name):
                        found.append(f"{where}:{node.lineno} imports {alias.name} from {base}")
            elif isinstance(node, ast.Import):
                modules.update(alias.asname for alias in node.names if alias.asname and alias.name in names)
        found += [f"{where}:{node.lineno} uses {node.value.id}.{node.attr}" for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                  and node.value.id in modules and _is_private(node.attr)]
    return found


def test_the_private_name_reader_sees_imports_and_attribute_reads(tmp_path):
    package = _package(tmp_path, a="_hidden = 1\nshown = 2\n",
                       b="from .a import _hidden, shown\nfrom . import a\n\ndef f():\n    return a._hidden\n")
    assert private_reaches(package, "pkg") == [f"{Path('pkg', 'b.py')}:1 imports _hidden from pkg.a",
                                                f"{Path('pkg', 'b.py')}:5 uses a._hidden"]


@pytest.mark.parametrize("folder", sorted(PACKAGES))
def test_no_module_uses_another_module_s_private_names(folder):
    """The guards' process state has one owner (``trtcap_guards.process_state``): the snapshot reads it there, not
    in the private names of the modules that change it."""
    assert private_reaches(ROOT / folder, PACKAGES[folder]) == []



# --- the plugin uses the guard library's declared API only --------------------------------------------------------

GUARDS = "trtcap_guards"
TOOLING = "trtcap_guards.tooling"
_MODULE_TEXT = re.compile(r"trtcap_guards\.\w+(\.\w+)*")


def _imports(tree: ast.Module, allowed: dict[str, set], where: Path, found: list[str]) -> dict[str, str]:
    """The local names bound to the package or the tooling module; imports of anything else go to ``found``."""
    aliases: dict[str, str] = {}  # local name -> GUARDS or TOOLING
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == GUARDS or (alias.name == TOOLING and not alias.asname):
                    aliases[alias.asname or GUARDS] = GUARDS  # ``import trtcap_guards.tooling`` binds the package
                elif alias.name == TOOLING:
                    aliases[alias.asname] = TOOLING
                elif alias.name.startswith(GUARDS + "."):
                    found.append(f"{where}:{node.lineno} import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith(GUARDS):
            names = allowed.get(node.module or "", set())
            found += [f"{where}:{node.lineno} from {node.module} import {a.name}" for a in node.names
                      if a.name not in names]
            if node.module == GUARDS:
                aliases.update({a.asname or a.name: TOOLING for a in node.names if a.name == "tooling"})
    return aliases


def undeclared_guard_uses(folder: Path, public: list[str], internal: list[str]) -> list[str]:
    """Every use of a guard name outside ``public`` (the package's) and ``internal`` (the tooling module's), in any
    import (inside functions too), attribute of an alias of either module, or string naming a guard module."""
    allowed = {GUARDS: set(public) | {"tooling"}, TOOLING: set(internal)}
    found: list[str] = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        where = path.relative_to(folder.parent)
        aliases = _imports(tree, allowed, where, found)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr not in allowed[aliases[node.value.id]]:
                found.append(f"{where}:{node.lineno} {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value != TOOLING \
                    and _MODULE_TEXT.fullmatch(node.value):
                found.append(f"{where}:{node.lineno} {node.value!r}")
    return found


def test_the_guard_name_reader_sees_every_way_to_reach_a_name(tmp_path):
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "a.py").write_text(
        "import trtcap_guards as g\n"
        "from trtcap_guards import shown, hidden, tooling\n"
        "from trtcap_guards.tooling import inner, secret\n"
        "import trtcap_guards.rules\n"
        "\n"
        "def late():\n"
        "    from trtcap_guards.targets import x\n"
        "    return g.shown, g.hidden, g.tooling.inner, tooling.inner, tooling.secret, 'trtcap_guards.state'\n"
    )
    found = undeclared_guard_uses(package, ["shown"], ["inner"])
    where = Path("plugin", "a.py")
    assert sorted(found) == sorted([
        f"{where}:2 from trtcap_guards import hidden", f"{where}:3 from trtcap_guards.tooling import secret",
        f"{where}:4 import trtcap_guards.rules", f"{where}:7 from trtcap_guards.targets import x",
        f"{where}:8 g.hidden", f"{where}:8 tooling.secret", f"{where}:8 'trtcap_guards.state'",
    ])


def test_the_plugin_uses_only_the_guards_public_names_and_their_tooling_module():
    """``trtcap_guards.__all__`` is what users may use; ``trtcap_guards.tooling`` holds what the plugin needs
    besides. A submodule reached directly is an API nobody declared (and a rename there breaks the plugin)."""
    found = undeclared_guard_uses(ROOT / "pytest_trtcap", trtcap_guards.__all__, tooling.__all__)
    assert found == []
