"""Find the module-level registries of an installed package that its own functions mutate (AST only, no import).

A registry here is a module-level dict, list, set, pass manager or converter registry (a literal, a constructor
call, or a container annotation); mutated means a function of the package calls a mutating method on it, assigns
or deletes an item or attribute of it, or rebinds a module global (``global X; X = ...``: the runtime switches).
Used by tests/test_isolation_inventory.py against ``pytest_trtcap.isolation.inventory``.
"""
from __future__ import annotations

import ast
import os
from collections.abc import Iterator
from dataclasses import dataclass

CONTAINER_CALLS = {"dict", "list", "set", "defaultdict", "OrderedDict", "Counter", "deque", "WeakValueDictionary",
                   "WeakKeyDictionary", "WeakSet", "build_from_passlist", "DynamoPassManager", "PassManager",
                   "ConverterRegistry"}
CONTAINER_ANNOTATIONS = ("Dict", "List", "Set", "dict", "list", "set", "DefaultDict", "OrderedDict", "Counter",
                         "Deque", "MutableMapping", "ConverterRegistry", "PassManager")
MUTATORS = {"append", "extend", "insert", "add", "update", "pop", "popitem", "remove", "discard", "clear",
            "setdefault", "add_pass_with_index", "remove_pass_with_index", "insert_debug_pass_before",
            "insert_debug_pass_after", "set_compilation_settings", "set_disallowed_targets", "sort", "reverse",
            "appendleft", "__setitem__", "__delitem__"}


@dataclass(frozen=True)
class Mutation:
    module: str
    name: str
    how: str
    where: str  # module:function


def _module_name(root: str, package: str, path: str) -> str:
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
    rel = rel[:-9] if rel.endswith(".__init__") else rel
    return package if rel == "__init__" else f"{package}.{rel}"


def _is_container(value: ast.AST | None, annotation: ast.AST | None) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    if isinstance(value, ast.Call):
        f = value.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in CONTAINER_CALLS:
            return True
    if annotation is not None:
        text = ast.unparse(annotation)
        return text.startswith(CONTAINER_ANNOTATIONS)
    return False


def _top_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """Module-level statements, looking into top-level if/try/with blocks."""
    stack = list(tree.body)
    while stack:
        node = stack.pop(0)
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []) or []:
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])


def _resolve_from(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _ModuleScan:
    def __init__(self, module: str, tree: ast.Module, is_package: bool) -> None:
        self.module, self.tree, self.is_package = module, tree, is_package
        self.containers: set[str] = set()
        self.names: dict[str, tuple[str, str]] = {}  # local name -> (module, name) imported from
        self.modules: dict[str, str] = {}  # alias -> module
        for node in _top_level(tree):
            if isinstance(node, ast.Assign) and _is_container(node.value, None):
                self.containers.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    _is_container(node.value, node.annotation):
                self.containers.add(node.target.id)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve_from(module, node, is_package)
                for alias in node.names:
                    self.names.setdefault(alias.asname or alias.name, (source, alias.name))
                    self.modules.setdefault(alias.asname or alias.name, f"{source}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.modules[alias.asname] = alias.name

    def resolve(self, node: ast.AST, local: set[str]) -> tuple[str, str] | None:
        if isinstance(node, ast.Name):
            if node.id in local:
                return None
            if node.id in self.containers:
                return (self.module, node.id)
            return self.names.get(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = self.modules.get(node.value.id)
            if target is None and node.value.id.startswith("torch_tensorrt"):
                target = node.value.id
            return (target, node.attr) if target else None
        if isinstance(node, ast.Attribute):  # a.b.c.NAME
            dotted = ast.unparse(node.value)
            if dotted.startswith("torch_tensorrt."):
                return (dotted, node.attr)
        return None

    def mutations(self) -> Iterator[Mutation]:
        for fn in ast.walk(self.tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from self._in_function(fn)

    def _in_function(self, fn: ast.AST) -> Iterator[Mutation]:
        declared_global = {n for node in ast.walk(fn) if isinstance(node, ast.Global) for n in node.names}
        args = fn.args
        local = {a.arg for a in args.args + args.kwonlyargs + args.posonlyargs}
        local |= {n.id for node in ast.walk(fn) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For))
                  for t in ([node.target] if not isinstance(node, ast.Assign) else node.targets)
                  for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        local -= declared_global
        where = f"{self.module}:{fn.name}"
        for node in ast.walk(fn):
            hit: tuple[tuple[str, str], str] | None = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                ref = self.resolve(node.func.value, local)
                hit = (ref, f".{node.func.attr}()") if ref else None
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Subscript):
                        ref = self.resolve(t.value, local)
                        if ref:
                            hit = (ref, "[...] =" if not isinstance(node, ast.Delete) else "del [...]")
                    elif isinstance(t, ast.Attribute):
                        ref = self.resolve(t.value, local)
                        if ref and ref[1] in self._all_containers():
                            hit = (ref, f".{t.attr} =")
                        elif ref is None and isinstance(t.value, ast.Name) and t.value.id in self.modules:
                            hit = ((self.modules[t.value.id], t.attr), "module attribute rebound")
                    elif isinstance(t, ast.Name) and t.id in declared_global:
                        hit = ((self.module, t.id), "global rebound")
            if hit is not None:
                (module, name), how = hit
                yield Mutation(module, name, how, where)

    def _all_containers(self) -> set[str]:
        return self.containers | set(self.names)


def scan(package_dir: str, package: str) -> list[Mutation]:
    """Every module-level container of ``package`` that a function of ``package`` mutates (or global rebinding)."""
    scans: dict[str, _ModuleScan] = {}
    for root, _, files in os.walk(package_dir):
        for f in sorted(files):
            if f.endswith(".py"):
                path = os.path.join(root, f)
                with open(path, encoding="utf-8") as fh:
                    try:
                        tree = ast.parse(fh.read(), path)
                    except SyntaxError:
                        continue
                name = _module_name(package_dir, package, path)
                scans[name] = _ModuleScan(name, tree, f == "__init__.py")
    containers = {(m, n) for m, s in scans.items() for n in s.containers}
    found = []
    for s in scans.values():
        for mut in s.mutations():
            if mut.how == "global rebound" or (mut.module, mut.name) in containers:
                found.append(mut)
            elif mut.module in scans and mut.name in scans[mut.module].names:  # re-exported container
                src = scans[mut.module].names[mut.name]
                if src in containers:
                    found.append(Mutation(src[0], src[1], mut.how, mut.where))
    return found
