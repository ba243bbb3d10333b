"""Benchmark: the plugin's load against the lightest well-known pytest plugins, installed the same way.

The other plugin-load rows measure this checkout (an editable install, in which pytest rewrites only the package
that holds the entry point) against an environment whose other plugins share the baseline. Here every plugin is a
wheel installed with ``pip install --no-compile`` into one throwaway virtual environment beside the pytest this
environment runs: pytest-timeout and pytest-randomly (single-module plugins with options, hooks and a fixture),
and this project built from the checkout. Each is counted alone against pytest alone (every other plugin off on
both sides), in CPU instructions under valgrind (``PYTHONHASHSEED=0``), with bytecode caches and with
``PYTHONDONTWRITEBYTECODE=1`` and no ``.pyc`` of the plugin under test (pytest's own modules keep theirs). For
information: what the issue's 2% looks like for plugins users already accept.

Needs valgrind and an index pip can install from; without either these rows are left out, saying so.

    python bench/bench_lightest_plugins.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import REPO, Result, banner, clean_env, write_one_test
from bench_load_instructions import _pair, available


class Plugin(NamedTuple):
    label: str  # row name stem
    distribution: str  # its distribution name
    requirement: str  # what pip installs (this project: the wheel built from the checkout)
    entry_points: tuple[str, ...]  # its pytest11 names: ``-p no:NAME`` turns it off


YARDSTICKS = [Plugin("timeout", "pytest-timeout", "pytest-timeout", ("timeout",)),
              Plugin("randomly", "pytest-randomly", "pytest-randomly", ("randomly",))]


def _python(venv: str) -> str:
    return os.path.join(venv, "bin", "python")


def _install(venv: str, wheels: str) -> list[Plugin]:
    """A virtual environment with this pytest, the yardsticks and this project's wheel, none byte-compiled."""
    import pytest

    subprocess.run([sys.executable, "-m", "venv", venv], check=True, capture_output=True)
    source = os.path.join(wheels, "source")  # built from a copy: the build leaves its folders beside the source
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".*", "build", "dist", "*.egg-info", "__pycache__",
                                                                 "tests", "bench", "examples"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source], check=True,
                   capture_output=True)
    wheel = next(os.path.join(wheels, f) for f in os.listdir(wheels) if f.startswith("pytest_trtcap-"))
    pip = [_python(venv), "-m", "pip", "install", "-q", "--no-compile", "--retries", "1", "--timeout", "20"]
    subprocess.run(pip + [f"pytest=={pytest.__version__}"] + [p.requirement for p in YARDSTICKS], check=True,
                   capture_output=True)
    subprocess.run(pip + ["--no-deps", wheel], check=True, capture_output=True)  # it loads without torch
    return [Plugin("trtcap", "pytest-trtcap", wheel, ("trtcap",)), *YARDSTICKS]


def _drop_bytecode(venv: str, plugin: Plugin) -> None:
    """Remove the ``__pycache__`` folders beside the plugin's files (pytest writes its rewritten modules there)."""
    listing = subprocess.run(
        [_python(venv), "-c", "import sys, importlib.metadata as m; d = m.distribution(sys.argv[1]); "
         "print(*(f.locate() for f in d.files or () if f.suffix == '.py'), sep='\\n')", plugin.distribution],
        capture_output=True, text=True, check=True).stdout.split()
    for folder in {os.path.dirname(path) for path in listing}:
        shutil.rmtree(os.path.join(folder, "__pycache__"), ignore_errors=True)


def _versions(venv: str, plugins: list[Plugin]) -> dict[str, str]:
    """``pytest-timeout 2.4.0`` and so on, as installed."""
    out = subprocess.run([_python(venv), "-c", "import sys, importlib.metadata as m; "
                          "print(*(m.version(d) for d in sys.argv[1:]))", *(p.distribution for p in plugins)],
                         capture_output=True, text=True, check=True).stdout.split()
    return {p.label: f"{p.distribution} {v}" for p, v in zip(plugins, out)}


def _rows(venv: str, workdir: str, plugins: list[Plugin], rounds: int) -> list[Result]:
    everything = [name for plugin in plugins for name in plugin.entry_points]
    base = [_python(venv), "-m", "pytest", "--collect-only", "-q", "test_one.py"]
    env = clean_env(PYTHONHASHSEED="0")
    env.pop("PYTHONPATH", None)  # the checkout must not shadow the installed wheel
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    alone = base[:3] + [a for name in everything for a in ("-p", f"no:{name}")] + base[3:]
    subprocess.run(alone, cwd=workdir, env=env, stdout=subprocess.DEVNULL, check=True)  # pytest's own .pyc files
    pairs: dict[str, dict[str, list[str]]] = {}
    for plugin in plugins:
        others = [a for name in everything if name not in plugin.entry_points for a in ("-p", f"no:{name}")]
        pairs[plugin.label] = {"with": base[:3] + others + base[3:], "without": alone}
    uncached = dict(env, PYTHONDONTWRITEBYTECODE="1")
    results = []
    versions = _versions(venv, plugins)
    for plugin in plugins:  # first without any bytecode of the plugin, then with the caches its first run wrote
        _drop_bytecode(venv, plugin)
        results.append(_pair(f"lightest_{plugin.label}_no_pyc", f"wheel install: {versions[plugin.label]} alone "
                             "against pytest alone, CPU instructions, PYTHONDONTWRITEBYTECODE=1, no .pyc of it",
                             pairs[plugin.label], rounds, workdir, uncached, warm=False))
        results.append(_pair(f"lightest_{plugin.label}", f"wheel install: {versions[plugin.label]} alone against "
                             "pytest alone, CPU instructions, bytecode caches on", pairs[plugin.label], rounds, workdir,
                             env, warm=True))
    return results


def run(quick: bool = False) -> list[Result]:
    if not available():
        print("\n== the lightest well-known plugins: valgrind is not installed, left out ==", flush=True)
        return []
    rounds = 1 if quick else 2
    banner(f"plugin load against the lightest well-known plugins, wheel installs in a throwaway virtual "
           f"environment, CPU instructions (valgrind), {rounds} run(s) each")
    with tempfile.TemporaryDirectory(prefix="trtcap-bench-lightest-") as workdir:
        try:
            plugins = _install(os.path.join(workdir, "venv"), os.path.join(workdir, "wheels"))
        except subprocess.CalledProcessError as exc:
            said = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-3:]
            print(f"could not install the yardsticks ({exc}; {' / '.join(said)}): left out", flush=True)
            return []
        write_one_test(workdir)
        return _rows(os.path.join(workdir, "venv"), workdir, plugins, rounds)


def main(argv: list[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one run per side")
    run(parser.parse_args(argv).quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
