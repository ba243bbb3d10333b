"""Run the isolation contract's generated suites (tests/test_isolation_contract.py) over every supported pytest,
with and without xdist: many more examples than CI runs, each on its own pytest.

    python .ci/isolation_contract.py [--examples N] [--pytest 8.0.2,8.4.2,9.0.0,9.2.0] [--checkout DIR]

Each pytest gets a virtual environment of its own under ``.contract/`` (git-ignored), layered on this one (a ``.pth``
names its site-packages, so torch and the rest are not installed again) with that pytest and the checkout (this one,
or ``--checkout DIR``: an older commit's worktree, to show what it misses) installed. The generated suites run there;
Hypothesis and the oracle run here. Prints one line per run and exits 1 if any failed.
"""

from __future__ import annotations

import argparse
import os
import site
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("8.0.2", "8.4.2", "9.0.0", "9.2.0")


def environment(version: str, checkout: Path) -> Path:
    """A venv with ``pytest==version`` and ``checkout`` installed, on top of this one's packages."""
    where = ROOT / ".contract" / f"{checkout.name}-pytest-{version}"
    python = where / "bin" / "python"
    check = (f"import pytest, pytest_trtcap; assert pytest.__version__ == {version!r}; "
             f"assert pytest_trtcap.__file__.startswith({str(checkout)!r})")
    if python.exists() and subprocess.run([str(python), "-c", check], cwd="/", capture_output=True).returncode == 0:
        return python
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
        site_dir = next(Path(p) for p in site.getsitepackages() if p.endswith("site-packages"))
        own = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
        Path(own, "_layered.pth").write_text(f"{site_dir}\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, f"pytest=={version}"], check=True)
    subprocess.run([*pip, "--no-deps", "-e", str(checkout)], check=True)
    subprocess.run([str(python), "-c", check], cwd="/", check=True)
    return python


def run(python: Path, examples: int, extra: str) -> tuple[bool, str]:
    env = {**os.environ, "TRTCAP_CONTRACT_PYTHON": str(python), "TRTCAP_CONTRACT_ARGS": extra,
           "TRTCAP_CONTRACT_EXAMPLES": str(examples)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_isolation_contract.py", "-k", "generated",
                           "-n", "0", "-q", "-x", "-p", "no:randomly"], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()
    first = next((line for line in tail if "AssertionError" in line), "")
    return proc.returncode == 0, (tail[-1] if tail else "") + (f" | {first.strip()}" if first else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per run (default 200)")
    parser.add_argument("--pytest", default=",".join(VERSIONS), help="comma list of pytest versions")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to test (default: this one)")
    args = parser.parse_args()
    ok = True
    for version in args.pytest.split(","):
        python = environment(version, args.checkout.resolve())
        for extra in ("", "-n 2"):
            start = time.monotonic()
            passed, line = run(python, args.examples, extra)
            ok &= passed
            print(f"pytest {version} {extra or 'serial':6} {args.examples} examples: "
                  f"{'passed' if passed else 'FAILED'} in {time.monotonic() - start:.0f} s ({line})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
