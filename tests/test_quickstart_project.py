"""The README's quickstart runs as written in a project of the user's own, outside this repository.

A new project in ``tmp_path`` gets the README's ``pytest.ini``, the README's test file and nothing else (no
conftest); this checkout's tracked files are copied to ``./pytest-trtcap`` there, as the README assumes. Its
``.venv`` is a new virtual environment layered on this one's site-packages (a ``.pth`` file naming them, so that
pip sees torch-tensorrt-rtx and its 5.7 GB as installed, as they would be in a user's environment), and the README's
install line runs in it as written. Where this environment holds a setuptools the build can use, ``PIP_NO_INDEX``
is set so that nothing can be downloaded, and build isolation is off through ``PIP_NO_BUILD_ISOLATION`` (an
isolated build would fetch setuptools from an index; the venv's own older copy is removed first); elsewhere the
isolated build may fetch setuptools. Either way the install must add pytest-trtcap and nothing else. The
README's two quickstart runs then go through that environment's ``pytest``, and what they print is compared with
what the README quotes, the way ``tests/test_doc_outputs.py`` compares every other quote (those two are left to this
test there).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from test_doc_outputs import QUICKSTART, mismatch

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _fenced(text: str, language: str) -> list[str]:
    return [block.split("\n```")[0] for block in text.split(f"```{language}\n")[1:]]


def install_line() -> str:
    return _fenced(README.split("## Install into your project")[1], "bash")[0].strip()


def quickstart_quotes() -> list[tuple[str, list[str]]]:
    """``(command, quoted lines)`` of each README console block that runs the quickstart file."""
    found = []
    for block in _fenced(README, "console"):
        first, *rest = block.rstrip("\n").split("\n")
        if first.startswith("$ " + QUICKSTART):
            found.append((first[2:], rest))
    return found


def _tracked_copy(destination: Path) -> None:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, names.stdout.split("\0")):
        source, target = ROOT / name, destination / name
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRTCAP_", "PYTEST_", "LANE_", "PIP_", "VIRTUAL_ENV"))}
    env.update(CUDA_VISIBLE_DEVICES="", COLUMNS="80")
    return env


def _own_packages(venv: Path) -> set[str]:
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "freeze", "--path",
                             _site_packages(venv)], capture_output=True, text=True, check=True)
    return {line.split("==")[0].lower() for line in listed.stdout.split()}


def _site_packages(venv: Path) -> str:
    return sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})


def _layers() -> tuple[list[str], bool]:
    """This environment's site-packages, one holding a setuptools this project builds with first; and whether
    there is one (then the install needs no index at all)."""
    import tomllib
    from packaging.requirements import Requirement
    from packaging.version import Version

    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
    wanted = next(Requirement(r) for r in build if Requirement(r).name == "setuptools").specifier

    def builds(site: str) -> bool:
        found = Path(site).glob("setuptools-*.dist-info")
        return any(wanted.contains(Version(d.name[len("setuptools-"):-len(".dist-info")])) for d in found)

    dirs = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    return sorted(dirs, key=lambda d: not builds(d)), any(builds(d) for d in dirs)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's project, set up and installed as the README says."""
    home = tmp_path_factory.mktemp("user-project")
    (home / "pytest.ini").write_text(_fenced(README, "ini")[0], encoding="utf-8")
    (home / "test_quickstart.py").write_text(_fenced(README, "python")[0] + "\n", encoding="utf-8")
    _tracked_copy(home / "pytest-trtcap")
    venv = home / ".venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_env())
    # the build runs in this environment (no isolation): the layered setuptools builds it, not the venv's old one
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "setuptools"], check=True,
                   env=_env(), capture_output=True)
    layers, offline = _layers()
    Path(_site_packages(venv), "_layered.pth").write_text("\n".join(layers) + "\n", encoding="utf-8")
    before = _own_packages(venv)
    env = dict(_env(), PIP_DISABLE_PIP_VERSION_CHECK="1")
    if offline:  # else pip's isolated build fetches setuptools, and only that, from the index
        env.update(PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0")
    done = subprocess.run(shlex.split(install_line()), cwd=home, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _own_packages(venv) - before == {"pytest-trtcap"}, done.stdout  # nothing else installed or downloaded
    if not (venv / "bin" / "pytest").exists():  # pytest came in with the layered environment, without its script
        (venv / "bin" / "pytest").write_text(
            f"#!{venv / 'bin' / 'python'}\nimport sys\nfrom pytest import console_main\nsys.exit(console_main())\n")
        (venv / "bin" / "pytest").chmod(0o755)
    return home


def test_the_readme_quotes_a_quickstart_run_at_turing_and_at_ada() -> None:
    commands = [command for command, _ in quickstart_quotes()]
    assert [re.search(r"--trt-target-sm (\S+)", c).group(1) for c in commands] == ["7.5", "8.9"], commands
    assert install_line().startswith(".venv/bin/pip install ")
    assert "--strict-markers" in _fenced(README, "ini")[0]


def test_the_installed_plugin_is_the_one_the_project_installed(project: Path) -> None:
    shown = subprocess.run([str(project / ".venv" / "bin" / "python"), "-c",
                            "import pytest_trtcap; print(pytest_trtcap.__file__)"],
                           cwd=project, env=_env(), capture_output=True, text=True, check=True)
    assert Path(shown.stdout.strip()).is_relative_to(project / "pytest-trtcap")


@pytest.mark.parametrize("command, quoted", quickstart_quotes(), ids=lambda v: v if isinstance(v, str) else "")
def test_the_quickstart_passes_in_a_project_of_its_own_as_the_readme_shows(project: Path, command: str,
                                                                           quoted: list[str]) -> None:
    done = subprocess.run(shlex.split(command), cwd=project, env=_env(), capture_output=True, text=True, timeout=600)
    printed = done.stdout.splitlines()
    assert done.returncode == 0, "\n".join(printed[-60:]) + done.stderr
    problem = mismatch(quoted, printed)
    assert problem is None, f"README: $ {command}\n{problem}\n--- printed:\n" + "\n".join(printed[-60:])
