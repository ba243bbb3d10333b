"""The guard library's table of public names (``trtcap_guards.exports``): each name the package answers is the
attribute of the submodule the table names, and ``__all__`` is the table's names. The same for the internal names
tools built on the guards use (``trtcap_guards.tooling``)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from loaded_modules import loaded_after

import trtcap_guards
from trtcap_guards import tooling
from trtcap_guards.exports import EXPORTS


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_each_name_is_the_attribute_of_the_submodule_the_table_names(name: str) -> None:
    module, _, attribute = EXPORTS[name].partition(".")
    defined = getattr(importlib.import_module(f"trtcap_guards.{module}"), attribute or name)
    assert getattr(trtcap_guards, name) is defined


def test___all___is_the_table_s_names_sorted() -> None:
    assert trtcap_guards.__all__ == sorted(EXPORTS)


def test_every_exported_name_resolves_and_is_listed() -> None:
    code = ("import trtcap_guards as g\n"
            "missing = [n for n in g.__all__ if getattr(g, n, None) is None]\n"
            "assert not missing, missing\n"
            "assert set(g.__all__) <= set(dir(g))\n"
            "from trtcap_guards import *\n"
            "assert callable(capability_decision) and g.gpu_less_import_status is g.gpuless.status\n"
            "assert g.ENV_TARGETS == g.targets.ENV_TARGETS == 'TRTCAP_TARGET_SM'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", sorted(tooling.NAMES))
def test_each_tooling_name_is_the_attribute_of_the_submodule_its_table_names(name: str) -> None:
    defined = getattr(importlib.import_module(f"trtcap_guards.{tooling.NAMES[name]}"), name)
    assert getattr(tooling, name) is defined
    assert name in tooling.__all__


def test_an_unknown_tooling_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        tooling.no_such_name  # noqa: B018


def test_importing_the_tooling_module_loads_nothing_else_of_the_guards() -> None:
    """Loaded in every pytest run: a name loads its module only when asked for."""
    assert loaded_after("import trtcap_guards.tooling") == ["trtcap_guards", "trtcap_guards.tooling"]
