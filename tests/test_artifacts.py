"""The release artefacts, checked as a package index and a new user would meet them.

The wheel and sdist are built from a copy of this tree (the sdist first, then the wheel from the unpacked sdist,
as ``python -m build`` does), validated by ``twine check --strict``, and the wheel is installed *non-editable*
into a fresh virtual environment. That environment reuses the heavy dependencies (torch, torch-tensorrt-rtx,
tensorrt-rtx: about 5.7 GB) through a folder of links to this environment's packages, leaving out this
checkout's own editable install, so the only pytest-trtcap it can import is the one from the wheel. The bundled
example sweep then runs there, outside the checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: What .gitignore keeps out of the tree (the release matrix's environments and the CUDA-host payload included: a
#: copy of those would be many gigabytes), so neither the copy nor the sdist check reads it.
IGNORED = (".venv", ".git", "__pycache__", "build", "dist", "*.egg-info", ".pytest_cache", ".hypothesis",
           ".trtcap", "sweep-out", ".ruff_cache", ".mypy_cache", ".releases", ".gpuhost")


class Built(NamedTuple):
    wheel: Path
    sdist: Path


def _run(*cmd: object, cwd: Path, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def _tree_files(root: Path) -> list[str]:
    """The files a release must carry: git's list in a checkout, the tree itself in an unpacked sdist."""
    if (root / ".git").exists():
        out = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout
        return sorted(line for line in out.splitlines() if line and (root / line).is_file())
    skip = set(IGNORED) | {"PKG-INFO", "setup.cfg"}
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not any(part in skip or part.endswith(".egg-info")
                                             for part in p.relative_to(root).parts))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    src = tmp_path_factory.mktemp("src") / "pytest-trtcap"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*IGNORED))
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src, cwd=src)
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Built(wheel, sdist)


def test_twine_check_strict_accepts_both_artefacts(built: Built) -> None:
    done = _run(sys.executable, "-m", "twine", "check", "--strict", built.wheel, built.sdist, cwd=built.wheel.parent)
    assert done.stdout.count("PASSED") == 2, done.stdout


def test_wheel_installs_exactly_the_two_packages_each_typed(built: Built) -> None:
    names = zipfile.ZipFile(built.wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"pytest_trtcap", "trtcap_guards"}
    assert {"pytest_trtcap/py.typed", "trtcap_guards/py.typed"} <= set(names)
    # Every file of the two packages in this tree (modules, the record's JSON Schema, py.typed) is in the wheel,
    # under its installed name.
    tree = [f for f in _tree_files(ROOT) if f.startswith(("pytest_trtcap/", "guards/"))]
    expected = {f.replace("guards/", "trtcap_guards/", 1) for f in tree}
    assert "pytest_trtcap/runs/record.schema.json" in expected
    assert expected - set(names) == set()


def test_wheel_metadata_declares_the_license_expression_and_entry_points(built: Built) -> None:
    wheel = zipfile.ZipFile(built.wheel)
    info = next(n.split("/")[0] for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    metadata = wheel.read(f"{info}/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata.splitlines()
    assert f"{info}/licenses/LICENSE" in wheel.namelist()
    entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert "[pytest11]\ntrtcap = pytest_trtcap.plugin" in entry_points
    assert "[console_scripts]\ntrtcap = " in entry_points


def test_sdist_carries_every_file_of_the_tree(built: Built) -> None:
    with tarfile.open(built.sdist) as sdist:
        prefix = sdist.getnames()[0].split("/")[0]
        held = {name[len(prefix) + 1:] for name in sdist.getnames()}
    missing = [f for f in _tree_files(ROOT) if f not in held and not f.startswith(".gitignore")]
    assert missing == []


@pytest.fixture(scope="module")
def fresh_env(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the built wheel installed, the heavy dependencies linked in."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=venv.parent)
    deps = venv.parent / "deps"
    deps.mkdir()
    ours = ("pytest_trtcap", "__editable__", "__editable___pytest_trtcap", "trtcap_guards", "distutils-precedence")
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if not entry.name.startswith(ours) and not entry.name.endswith(".pth"):
            (deps / entry.name).symlink_to(entry)
    python = venv / "bin" / "python"
    fresh_site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                           cwd=venv).stdout.strip())
    (fresh_site / "trtcap-test-deps.pth").write_text(f"{deps}\n")
    _run(python, "-m", "pip", "install", "--no-deps", "--no-index", built.wheel, cwd=venv)
    return venv


def _outside_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "TRTCAP_")) and k != "PYTHONPATH"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def test_fresh_env_imports_the_wheel_not_the_checkout(fresh_env: Path, tmp_path: Path) -> None:
    code = "import pytest_trtcap, trtcap_guards; print(pytest_trtcap.__file__); print(trtcap_guards.__file__)"
    out = _run(fresh_env / "bin" / "python", "-c", code, cwd=tmp_path, env=_outside_env()).stdout.split()
    assert all(path.startswith(str(fresh_env)) for path in out), out


def test_example_sweep_runs_against_the_installed_wheel(fresh_env: Path, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run([str(fresh_env / "bin" / "trtcap"), "sweep", "--arms", "7.5,8.9", "--", "examples"],
                          cwd=tmp_path, env=_outside_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "RESULT: COMPLETE" in done.stdout


def test_unpacked_sdist_tests_collect_and_its_guard_tests_pass(built: Built, fresh_env: Path,
                                                               tmp_path: Path) -> None:
    """The sdist's own suite: every module collects from the unpacked sdist and a slice of it runs green.

    The full suite from the sdist is the same files as this checkout's (checked above), so running all of it again
    would only double CI time; the slice proves the sdist's test helpers and configuration are complete.
    """
    with tarfile.open(built.sdist) as sdist:
        sdist.extractall(tmp_path, filter="data")
    (unpacked,) = tmp_path.iterdir()
    python = str(fresh_env / "bin" / "python")
    collected = _run(python, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", cwd=unpacked,
                     env=_outside_env())
    assert " error" not in collected.stdout.splitlines()[-1], collected.stdout[-2000:]
    done = _run(python, "-m", "pytest", "-q", "-p", "no:randomly", "tests/test_guards_targets.py",
                "tests/test_readme.py", cwd=unpacked, env=_outside_env())
    summary = done.stdout.splitlines()[-1]  # "52 passed, 1 xfailed in 9.1s": an xfail is not a failure
    assert done.returncode == 0 and re.search(r"\b\d+ passed\b", summary), done.stdout[-2000:]
    assert not re.search(r"\b\d+ (failed|error|errors)\b", summary), done.stdout[-2000:]
