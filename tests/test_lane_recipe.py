"""The CPU lane's recipe and CI job: read from docs/cpu-lane.md, its install line run, and its dry-run claim checked.

The recipe's ``pytest`` lines run in ``tests/test_lane.py`` (its 8.9 and 7.5 runs are those lines), in what the
recipe assumes - a suite's repository with this repository checked out at ``./pytest-trtcap`` (a symlink to this
checkout) and a Torch-TensorRT-style partitioning suite at ``tests/py/dynamo/partitioning`` (a copy of
``tests/lane_suite``) - on a host with no visible CUDA device, through :func:`run_line`:

* the ``pytest`` lines as written (split like a shell would; the lane adds ``-rA`` and a JUnit XML report, which
  change only what is reported), with ``pytest`` on ``PATH`` being this interpreter's (a two-line script running
  ``python -m pytest``, as pip's console script does: the checkout's ``bin/pytest`` may belong to another
  environment that shares its site-packages);
* the ``pip install`` line is the one substitution: installing would re-install this environment (and pip's build
  isolation would fetch setuptools from an index, which this machine cannot reach), so the line runs as written
  plus ``--dry-run --no-deps --no-index --no-build-isolation --report``, in a second suite repository whose
  ``./pytest-trtcap`` is a copy of this checkout's tracked files (building the metadata writes an ``.egg-info``
  into the source tree, which must not land in this checkout). That proves pip builds and would install
  ``pytest-trtcap`` from a checkout with no index at all; the environment the ``pytest`` lines then use is the
  editable install of this same checkout (checked from its ``direct_url.json``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import trtcap_guards as guards

ROOT = Path(__file__).resolve().parent.parent
LANE_DOC = (ROOT / "docs" / "cpu-lane.md").read_text(encoding="utf-8")
SUITE_PATH = "tests/py/dynamo/partitioning"

needs_stack = pytest.mark.skipif(
    importlib.util.find_spec("torch_tensorrt") is None, reason="the recipe runs the real Torch-TensorRT"
)


def recipe() -> list[str]:
    start = LANE_DOC.index("<!-- lane-recipe:start -->")
    block = LANE_DOC[start:LANE_DOC.index("<!-- lane-recipe:end -->")]
    body = block.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line.strip() for line in body.splitlines() if line.strip()]


def ci_job() -> dict[str, Any]:
    """The lane's CI YAML: its matrix of targets and its ``run:`` steps."""
    start = LANE_DOC.index("capability-lane:")
    yaml = LANE_DOC[start:LANE_DOC.index("```", start)]
    sm = re.search(r"sm: \[([^\]]*)\]", yaml)
    assert sm is not None, yaml
    return {
        "sm": [item.strip().strip('"') for item in sm.group(1).split(",")],
        "run": [line.split("- run:", 1)[1].strip() for line in yaml.splitlines() if "- run:" in line],
        "text": yaml,
    }


# --- what the recipe and the CI job say ----------------------------------------------------------------------


def test_recipe_installs_from_a_checkout_and_uses_needs_gpu_skip() -> None:
    lines = recipe()
    installs = [line for line in lines if line.startswith("pip install")]
    assert installs == ["pip install -e './pytest-trtcap[rtx]'"], lines
    runs = [line for line in lines if line.startswith("pytest ")]
    assert runs == [f"pytest {SUITE_PATH} --trt-target-sm {sm} --trtcap-needs-gpu skip" for sm in ("8.9", "7.5")]


def test_ci_job_runs_the_recipes_commands() -> None:
    job = ci_job()
    assert sorted(job["sm"]) == ["7.5", "8.9"]
    assert "path: pytest-trtcap" in job["text"]  # the checkout the install line installs from
    lines = recipe()
    assert job["run"][0] == lines[0]
    expanded = sorted(job["run"][1].replace("${{ matrix.sm }}", sm) for sm in job["sm"])
    assert expanded == sorted(lines[1:])


# --- the recipe, run ---------------------------------------------------------------------------------------------


def run_line(line: str, cwd: Path, extra: list[str] = ()) -> subprocess.CompletedProcess:
    """A line of the recipe, run in ``cwd`` as a shell would run it there (plus ``extra``), with no CUDA device."""
    bin_dir = cwd / ".bin"
    if not bin_dir.exists():
        bin_dir.mkdir()
        script = bin_dir / "pytest"
        script.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m pytest "$@"\n', encoding="utf-8")
        script.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_", "LANE_"))}
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([*shlex.split(line), *extra], cwd=str(cwd), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)


def _copy_of_this_checkout(dest: Path) -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=str(ROOT), stdout=subprocess.PIPE, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)


def test_the_install_line_installs_the_checkout_with_no_index(tmp_path: Path) -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("copies the checkout's tracked files with git")
    repo = tmp_path / "suite-repository"
    _copy_of_this_checkout(repo / "pytest-trtcap")
    install = recipe()[0]
    report = tmp_path / "report.json"
    proc = run_line(
        install, repo, ["--dry-run", "--no-deps", "--no-index", "--no-build-isolation", "--report", str(report)]
    )
    assert proc.returncode == 0, proc.stdout[-3000:]
    items = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert [item["metadata"]["name"] for item in items] == ["pytest-trtcap"]
    assert Path(items[0]["download_info"]["url"].removeprefix("file://")) == repo / "pytest-trtcap"
    assert items[0]["download_info"]["dir_info"].get("editable") is True
    assert set(items[0]["requested_extras"]) == {"rtx"}
    # The environment the pytest lines use is that same editable install of this checkout.
    # (an editable install leaves pytest_trtcap.egg-info in the checkout too; it has no direct_url.json)
    (direct,) = [json.loads(d.read_text("direct_url.json")) for d in metadata.distributions(name="pytest-trtcap")
                 if d.read_text("direct_url.json")]
    assert Path(direct["url"].removeprefix("file://")).resolve() == ROOT and direct["dir_info"].get("editable")


# --- the dry-run claim -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dryrun_models(tt: Any) -> dict[str, Any]:
    import torch

    class WithLinear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 4)

        def forward(self, x: Any) -> Any:
            return torch.relu(self.fc(x))

    class WeightsAsInputs(torch.nn.Module):
        def forward(self, x: Any, w: Any, b: Any) -> Any:
            return torch.relu(torch.nn.functional.linear(x, w, b))

    x, w, b = torch.randn(2, 8), torch.randn(4, 8), torch.randn(4)
    return {
        "nn.Linear": (torch.export.export(WithLinear().eval(), (x,)), [x]),
        "weights as inputs": (torch.export.export(WeightsAsInputs().eval(), (x, w, b)), [x, w, b]),
    }


@needs_stack
@pytest.mark.parametrize("sm, model, offload, works", [
    ("8.9", "nn.Linear", False, False),
    ("7.5", "nn.Linear", False, False),
    ("8.9", "nn.Linear", True, True),
    ("7.5", "nn.Linear", True, False),
    ("7.5", "weights as inputs", True, True),
    ("7.5", "weights as inputs", False, False),
])
def test_dryrun_on_cpu_needs_offload_and_at_75_weights_as_inputs(
    tt: Any, dryrun_models: dict[str, Any], sm: str, model: str, offload: bool, works: bool
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("the claim is about a host without a CUDA device")
    exported, inputs = dryrun_models[model]
    kwargs = {"offload_module_to_cpu": True} if offload else {}
    with guards.declare_targets(sm, origin="test_lane_recipe"), guards.installed():
        if works:
            tt.dynamo.compile(exported, inputs=inputs, min_block_size=1, dryrun=True, **kwargs)
        else:
            with pytest.raises(RuntimeError, match="^Found no NVIDIA driver on your system"):
                tt.dynamo.compile(exported, inputs=inputs, min_block_size=1, dryrun=True, **kwargs)
