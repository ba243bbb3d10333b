"""Loading is lazy where every pytest run pays for it: ``trtcap_guards`` exports on first use, and importing the
plugin loads neither the rules, the predicate nor the registry. Checked in fresh processes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from loaded_modules import loaded_after as _loaded

import trtcap_guards


def test_importing_the_guards_loads_no_submodule() -> None:
    assert _loaded("import trtcap_guards") == ["trtcap_guards"]


def test_importing_the_plugin_loads_neither_rules_table_checks_predicate_nor_registry() -> None:
    loaded = _loaded("import pytest, pytest_trtcap.plugin")
    assert "pytest_trtcap.options" in loaded  # the markers are registered by the names declared there
    for heavy in ("trtcap_guards.rules", "trtcap_guards.node_checks", "trtcap_guards.targets",
                  "trtcap_guards.registry", "trtcap_guards.validators", "trtcap_guards.builder",
                  "trtcap_guards.capabilities", "pytest_trtcap.markers", "pytest_trtcap.session_state",
                  "trtcap_guards.exports", "torch"):
        assert heavy not in loaded, loaded


def test_a_session_that_never_uses_the_plugin_loads_of_the_guards_only_the_names_state_and_import_hook(
        pytester: pytest.Pytester) -> None:
    """The guards' state object is made in every run (the plugin listens for its first change), but what only a
    change needs (the undo handles' module, the snapshot, the GPU-less record) loads at that change. Quiet: the
    header line of a default run reads the capability decision."""
    pytester.makepyfile(test_dormant="""
import sys

def test_lists_what_is_loaded():
    print("LOADED", sorted(m for m in sys.modules if m.startswith("trtcap_guards")))
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-s", "-q")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["LOADED ['trtcap_guards', 'trtcap_guards.environment', 'trtcap_guards.import_hook', "
                                 "'trtcap_guards.process_state', 'trtcap_guards.tooling']"])


def test_the_modules_every_pytest_run_loads_have_no_assert_for_pytest_to_rewrite() -> None:
    """They opt out of pytest's assertion rewriting (``PYTEST_DONT_REWRITE``), which every run whose bytecode is
    not cached would otherwise pay for; an assert added to one would then fail without pytest's explanation."""
    import ast
    import importlib

    loaded = _loaded("import pytest, pytest_trtcap.plugin")
    ours = [name for name in loaded if name.startswith(("pytest_trtcap", "trtcap_guards"))]
    assert "pytest_trtcap.plugin" in ours and "trtcap_guards.import_hook" in ours
    for name in ours:
        with open(importlib.import_module(name).__file__, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        assert "PYTEST_DONT_REWRITE" in (ast.get_docstring(tree) or ""), name
        assert not [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)], name


DROPPED = """
import sys
import trtcap_guards as g
import trtcap_guards.state
for name in [m for m in sys.modules if m.startswith("trtcap_guards.")]:
    del sys.modules[name]  # as pytester does after an in-process run
from trtcap_guards import state, targets
assert targets is sys.modules["trtcap_guards.targets"], "from trtcap_guards import targets: a dropped copy"
assert g.targets is targets and g.state is state, "the package's attribute: a dropped copy"
assert state.STATE is sys.modules["trtcap_guards.process_state"].STATE, "the state module's STATE: a dropped copy"
g.declare_targets("8.9")
assert state.state_snapshot().targets == ((8, 9),), "the state read from a module nobody declares into"
"""


def test_a_submodule_dropped_from_sys_modules_is_answered_again_not_from_a_kept_copy() -> None:
    """pytester drops from ``sys.modules`` the modules an in-process run loaded; the import system had also bound
    each submodule on the package. Kept, that copy answered ``from trtcap_guards import targets`` and the guards'
    own ``from . import targets`` in a module imported again: the guards' state split in two."""
    proc = subprocess.run([sys.executable, "-c", DROPPED], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_a_submodule_stood_in_for_on_the_package_is_put_back() -> None:
    """A test may stand in for a submodule on the package (by monkeypatch, or by hand); setting the real one back,
    the module ``sys.modules`` holds, must drop the stand-in, not keep it."""
    import types

    real = trtcap_guards.targets
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(trtcap_guards, "targets", types.ModuleType("stand_in"))
        assert trtcap_guards.targets is not real
    assert trtcap_guards.targets is real
    trtcap_guards.targets = types.ModuleType("stand_in")
    trtcap_guards.targets = real
    assert trtcap_guards.targets is real


def test_dir_and_getmembers_list___all__() -> None:
    """``__all__`` is answered on first use, not a global: ``dir()`` (and so ``inspect.getmembers``, completion)
    must still list it, as it lists the exports."""
    import inspect

    assert "__all__" in dir(trtcap_guards)
    assert dict(inspect.getmembers(trtcap_guards))["__all__"] == trtcap_guards.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        trtcap_guards.no_such_name  # noqa: B018
    assert not hasattr(trtcap_guards, "no_such_name")


def test_the_distribution_scan_agrees_with_importlib_metadata() -> None:
    """The header's backend and version come from a scan of sys.path, not importlib.metadata's full index."""
    from importlib import metadata

    from trtcap_guards.distributions import TORCH_TENSORRT, installed_versions

    expected = {}
    for dist in TORCH_TENSORRT:
        try:
            expected[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    assert installed_versions() == expected


RACE = '''
import importlib.abc, importlib.machinery, sys, threading
import trtcap_guards

started, go = threading.Event(), threading.Event()

class Held(importlib.abc.Loader):
    """trtcap_guards.targets, its execution held half-way until ``go``: a first import still running."""
    def __init__(self, inner): self.inner = inner
    def create_module(self, spec): return self.inner.create_module(spec)
    def exec_module(self, module):
        started.set(); go.wait()
        self.inner.exec_module(module)

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "trtcap_guards.targets":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        spec.loader = Held(spec.loader)
        return spec

sys.meta_path.insert(0, Finder())
first = threading.Thread(target=lambda: importlib.import_module("trtcap_guards.targets"))
first.start(); started.wait()
seen = []
second = threading.Thread(target=lambda: seen.append(repr(getattr(trtcap_guards, "declare_targets", None))))
second.start()
while second.is_alive():  # blocked on the import lock (fixed), or already done with what it found (the race)
    frames = sys._current_frames().get(second.ident)
    names = []
    while frames is not None:
        names.append(frames.f_code.co_name); frames = frames.f_back
    if "_find_and_load" in names or "acquire" in names:
        break
    threading.Event().wait(0.001)
go.set(); first.join(); second.join()
print(seen[0] if seen else "NOTHING")
'''


def test_an_export_read_while_another_thread_first_imports_its_module_waits_for_it() -> None:
    """Two threads, one first importing ``trtcap_guards.targets``: the other's ``trtcap_guards.declare_targets``
    took the half-initialised module from ``sys.modules`` and failed with an AttributeError ("partially
    initialized module"), instead of waiting for the import as ``import`` does."""
    proc = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().startswith("<function declare_targets"), proc.stdout + proc.stderr[-2000:]
