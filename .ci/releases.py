"""The release matrix: this project against every supported torch-tensorrt-rtx release, one virtual environment each.

Run by hand before a release (CI tests one release; time allows one). For each release it makes
``.releases/<release>/venv`` from the package index, installs this checkout into it (a built wheel, not an editable
link), runs the main job (``trtcap sweep --arms 7.5,8.9 -- examples``) and the guard library's tests, and writes one
table to ``docs/releases.md`` with the date and the command.

    python .ci/releases.py                 # every supported release
    python .ci/releases.py 2.12 2.14       # some of them

The package index is asked directly (this machine's pip settings may point at a local wheel store whose torch is a
CPU build, which no torch-tensorrt-rtx release supports), so each environment holds the same wheels a user's would.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".releases"
DOC = ROOT / "docs" / "releases.md"

#: Supported releases (torch-tensorrt-rtx minors); each pins its own torch and TensorRT-RTX.
RELEASES = ("2.11", "2.12", "2.13", "2.14")
#: What a release's own metadata leaves open: 2.11 asks for any TensorRT-RTX >= 1.3 (pip would take 1.7, outside
#: the rtx extra); it is supported, and tested here, with 1.4.
PINS = {"2.11": ["tensorrt-rtx==1.4.*"]}
#: Releases whose ``import torch_tensorrt`` runs TensorRT-RTX's ``tensorrt_rtx/plugin`` package, which imports a
#: bindings module no TensorRT-RTX wheel ships: the import fails on every host until that package is removed.
BROKEN_PLUGIN_PACKAGE = ("2.11",)
#: What differs between the releases, as a user sees it (written under the table).
NOTES = [
    "Install a release with the extra: `pip install -e './pytest-trtcap[rtx]' 'torch-tensorrt-rtx==2.12.*'` (without a",
    "pin, pip takes 2.14). On 2.11 add `'tensorrt-rtx==1.4.*'`: 2.11 asks for any TensorRT-RTX from 1.3 on, the",
    "extra allows 1.4 to 1.6, and 2.11 is tested with 1.4.",
    "",
    "- 2.11's `import torch_tensorrt` probes TensorRT-RTX's plugin package (`tensorrt_rtx/plugin`), which imports a",
    "  bindings module no TensorRT-RTX wheel ships, so it fails on every host, GPU or not, with or without this",
    "  plugin: `ModuleNotFoundError: No module named 'tensorrt_rtx_bindings.plugin'`. Remove that package after",
    "  installing, as the matrix does (the `tensorrt_rtx/plugin` folder in site-packages); 2.12 and later skip the",
    "  probe.",
    "- Only 2.14 fuses `constant_pad_nd -> convolution` into `tensorrt.conv_asym_pad` (its lowering pass",
    "  `fuse_pad_into_convolution`); on 2.11 to 2.13 the convolution stays `aten.convolution`, which the 3D",
    "  convolution guard keeps off TensorRT at 7.5 just the same. A causal Conv3d then partitions into",
    "  (2 TensorRT, 1 PyTorch) blocks at 7.5, not (1, 1): `expected_partition_counts(..., releases=...)` states it.",
    "- The registry review is of 2.14 (`trtcap_guards/review_2_14.py`); each older release's converter registry is",
    "  covered by it (`unreviewed_targets()` is empty).",
    "- On 2.11 a model exported on the CPU lowers attention to `aten._scaled_dot_product_flash_attention_for_cpu`,",
    "  which 2.11 has no converter for: it runs in PyTorch at every dtype and on every arm (nothing reaches",
    "  TensorRT), and the attention example states it (`releases={\"<2.12\": ...}`). Exported on a CUDA device,",
    "  2.11's attention is a fused kernel (cuDNN, efficient or flash), which it converts and the guards cover.",
    "  Later releases keep `scaled_dot_product_attention` one node. On a GPU host, build models on the device.",
    "- Isolation holds what each release has: the inventory lists the releases of each piece of state",
    "  ([plugin.md](plugin.md#isolation)); 2.11 to 2.13 have no constant-fold exclusion rules to hold.",
]
TEST_TOOLS = ["pytest>=8.0", "pytest-xdist>=3.5", "hypothesis>=6.100", "rich>=13"]
#: The guard library's tests, and the inventory's drift test (isolation holds every registry the release mutates).
GUARD_TESTS = ("tests/test_guards_*.py", "tests/test_isolation_inventory.py")
PROBE = (
    "import json, trtcap_guards as g; tt = g.import_torch_tensorrt(); import torch, tensorrt;"
    "print(json.dumps({'torch_tensorrt': tt.__version__, 'torch': torch.__version__,"
    " 'tensorrt': getattr(tensorrt, '__version__', '?'), 'unreviewed': list(g.unreviewed_targets())}))"
)


@dataclass
class Result:
    """One release's row of the table."""

    release: str
    versions: str = ""
    unreviewed: str = ""
    main_job: str = "not run"
    guard_tests: str = "not run"
    seconds: float = 0.0


def _index_env() -> dict[str, str]:
    """The environment for pip: this machine's pip settings off, the public index only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") or k == "PIP_CERT"}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def _run(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``cmd`` in the checkout; the command and all it printed go to the release's log."""
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    return proc


def prepare(release: str, log: Path) -> Path:
    """A virtual environment with the release, its torch and TensorRT-RTX, this project and the test tools."""
    venv = WORK / release / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    stack = [f"torch-tensorrt-rtx=={release}.*", *PINS.get(release, ()), *TEST_TOOLS]
    for args in (stack, ["--no-deps", "--force-reinstall", str(ROOT)]):
        if _run(pip + args, log, env=_index_env()).returncode != 0:
            raise RuntimeError(f"pip install {' '.join(args)} failed: see {log}")
    if release in BROKEN_PLUGIN_PACKAGE:
        for plugin in venv.glob("lib/python*/site-packages/tensorrt_rtx/plugin"):
            shutil.rmtree(plugin)  # what a 2.11 user must do too (docs/releases.md)
    return python


def _sweep(python: Path, release: str, log: Path) -> str:
    """The main job's result, exit status and arm-specific failures, from its JSON report."""
    cmd = [str(python.parent / "trtcap"), "sweep", "--arms", "7.5,8.9", "--out", str(WORK / release / "sweep"),
           "--format", "json", "--", "examples"]
    proc = _run(cmd, log)
    try:
        summary = json.loads(proc.stdout)
    except ValueError:
        return f"exit {proc.returncode}, no report (see log)"
    specific = sorted({d["nodeid"].rpartition("/")[2] for d in summary.get("differences", [])
                       if d.get("class") == "arm-specific failure"})
    return f"{summary.get('result')}, exit {proc.returncode}; arm-specific: {', '.join(specific) or 'none'}"


def _pytest_line(python: Path, log: Path) -> str:
    tests = sorted(str(p.relative_to(ROOT)) for pattern in GUARD_TESTS for p in ROOT.glob(pattern))
    cmd = [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", *tests]
    proc = _run(cmd, log)
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    return (lines[-1].strip("= ") if lines else f"exit {proc.returncode}")


def run_release(release: str) -> Result:
    result, started = Result(release), time.monotonic()
    (WORK / release).mkdir(parents=True, exist_ok=True)
    log = WORK / release / "log.txt"
    log.write_text("")
    try:
        python = prepare(release, log)
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        result.main_job = f"not installed: {exc}"
        return result
    probe = subprocess.run([str(python), "-c", PROBE], cwd="/", capture_output=True, text=True, check=False)
    try:
        facts = json.loads(probe.stdout.strip().splitlines()[-1])
        result.versions = f"torch-tensorrt-rtx {facts['torch_tensorrt']}, torch {facts['torch']}, " \
                          f"TensorRT-RTX {facts['tensorrt']}"
        result.unreviewed = ", ".join(facts["unreviewed"]) or "none"
    except (ValueError, IndexError, KeyError):
        result.versions = f"import failed (see {log.relative_to(ROOT)})"
    result.main_job = _sweep(python, release, log)
    result.guard_tests = _pytest_line(python, log)
    result.seconds = time.monotonic() - started
    return result


def _last_results() -> list[Result]:
    """Each release's last result (a release not run this time keeps the row of its last run)."""
    saved = [WORK / r / "result.json" for r in RELEASES]
    return [Result(**json.loads(path.read_text())) for path in saved if path.is_file()]


def render_table(results: list[Result], command: str, date: str) -> str:
    """docs/releases.md: each row is a run's own output (the guard tests' column is pytest's summary line)."""
    rows = [f"| {r.release} | {r.versions} | {r.main_job} | {r.guard_tests} | {r.unreviewed} | {r.seconds:.0f} s |"
            for r in results]
    return "\n".join([
        "# Supported releases", "",
        "pytest-trtcap supports torch-tensorrt-rtx 2.11, 2.12, 2.13 and 2.14, each with the torch and TensorRT-RTX it",
        "pins. CI tests 2.14; this table comes from the release matrix, run by hand before a release on a machine",
        "without a GPU:", "", f"    {command}", "", f"Last run: {date}.", "",
        "Each row is what that run printed. The guard library tests are those of the checkout on that date: the",
        "project adds tests between releases, so a checkout of today may collect more of them than a row counts.", "",
        "| release | installed | main job (`trtcap sweep --arms 7.5,8.9 -- examples`) | guard library tests |"
        " `unreviewed_targets()` | time |",
        "|---|---|---|---|---|---|", *rows, "", *NOTES, "",
    ])


def write_table(results: list[Result], command: str) -> None:
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render_table(results, command, date))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("releases", nargs="*", default=list(RELEASES), help="releases to run (default: all)")
    ns = parser.parse_args(argv)
    unknown = [r for r in ns.releases if r not in RELEASES]
    if unknown:
        parser.error(f"unsupported release {unknown[0]!r}: choose from {', '.join(RELEASES)}")
    results = [run_release(r) for r in ns.releases]
    for r in results:
        (WORK / r.release / "result.json").write_text(json.dumps(dataclasses.asdict(r)))
    write_table(_last_results(), " ".join(["python .ci/releases.py", *(sys.argv[1:] if argv is None else argv)]))
    print(DOC.read_text())
    return 0 if all(r.main_job.startswith("COMPLETE") for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
