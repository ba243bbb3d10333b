"""The project's linter (ruff, configured in pyproject.toml) passes on the whole tree; CI runs it through here."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff() -> list:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "ruff"]


def test_ruff_check_passes_on_the_tree():
    done = subprocess.run([*_ruff(), "check", "--no-cache", str(ROOT)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_passes_on_both_packages_with_check_untyped_defs(pytestconfig, tmp_path):
    """Type-checked as installed: ``guards/`` is the package ``trtcap_guards``, so both are checked through links
    named as they import (the configuration in pyproject.toml applies). The links and mypy's cache live in pytest's
    own cache (``.pytest_cache``; ``tmp_path`` under ``-p no:cacheprovider``), so a second run re-checks only what
    changed, as mypy does anywhere."""
    cache = getattr(pytestconfig, "cache", None)
    home = Path(cache.mkdir("trtcap-mypy")) if cache is not None else tmp_path
    links = home / "links"
    links.mkdir(exist_ok=True)
    for name, target in (("trtcap_guards", ROOT / "guards"), ("pytest_trtcap", ROOT / "pytest_trtcap")):
        link = links / name
        if not (link.is_symlink() and link.resolve() == target.resolve()):
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(target, target_is_directory=True)
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
                           "--cache-dir", str(home / "cache"), "-p", "trtcap_guards", "-p", "pytest_trtcap"],
                          cwd=links, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_the_configuration_selects_the_rules_the_project_relies_on():
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    # unused names and imports, unused arguments, import order, complexity, long functions
    assert {"F", "ARG", "I", "C90", "PLR0915"} <= set(lint["select"])
