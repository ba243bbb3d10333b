"""The guard library's import name is its own: a project's ``guards.py`` and PyPI's ``guards`` keep working.

The folder is ``guards/`` in the repository; it installs as ``trtcap_guards``. Importing the folder under any
other name fails at once, so two copies of the guards' state can never exist in one process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECIPE = Path(__file__).with_name("plugin_recipe.py")

GUARDED_SUITE = '''
import guards
import plugin_recipe
from pytest_trtcap import count_partitions

import trtcap_guards


def test_guards_is_the_projects_own_module():
    assert guards.WHOSE == "{whose}", guards.__file__


def test_the_fp32_linears_fall_back_at_75():
    assert trtcap_guards.is_installed()
    pm, _, _ = plugin_recipe.partition()
    assert count_partitions(pm) == (1, 2)
'''


def test_a_project_with_its_own_guards_module(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(guards='WHOSE = "project"\n')
    pytester.makeconftest("import torch_tensorrt  # noqa: F401\n")
    pytester.makepyfile(plugin_recipe=RECIPE.read_text(), test_project=GUARDED_SUITE.format(whose="project"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["trtcap: targets: 7.5 *; guards: installed (*"])
    assert "Error while loading plugin" not in result.stdout.str() + result.stderr.str()


@pytest.fixture(scope="module")
def pypi_guards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PyPI's unrelated ``guards`` distribution, installed beside ours into a folder of its own."""
    target = tmp_path_factory.mktemp("pypi-guards")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), "guards==1.1.0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout
    assert (target / "guards" / "__init__.py").is_file()
    return target


def test_pypi_guards_installed_beside_pytest_trtcap(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pypi_guards: Path
) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, (str(pypi_guards), os.environ.get("PYTHONPATH")))))
    pytester.makeconftest("import torch_tensorrt  # noqa: F401\n")
    suite = GUARDED_SUITE.replace('assert guards.WHOSE == "{whose}", guards.__file__', (
        f"assert guards.__file__.startswith({str(pypi_guards)!r}), guards.__file__"
    ))
    pytester.makepyfile(plugin_recipe=RECIPE.read_text(), test_pypi=suite)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=2)


def test_the_folder_under_another_name_refuses_at_once() -> None:
    proc = subprocess.run([sys.executable, "-c", "import guards"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "ImportError: pytest-trtcap's guard library must be imported as 'trtcap_guards', not 'guards' "
        "(install the project, e.g. pip install -e .)"
    ), proc.stderr
