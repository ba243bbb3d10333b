"""The GitHub Actions workflow users copy (docs/ci/trtcap.yml): every ``trtcap`` and ``pytest`` command in it is one
the command and the plugin accept, the files it reads are the ones a sweep writes, and its summary step prints
markdown from real records."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from runs_helpers import trtcap

from pytest_trtcap.options import SPECS
from pytest_trtcap.runs.cli import build_parser
from pytest_trtcap.runs.sweep import check_pytest_args

WORKFLOW = Path(__file__).resolve().parent.parent / "docs" / "ci" / "trtcap.yml"


def run_lines() -> list[str]:
    """Each shell line of the workflow's ``run:`` steps, without redirections into GitHub's files."""
    lines, block = [], None
    for raw in WORKFLOW.read_text().splitlines():
        indent = len(raw) - len(raw.lstrip())
        if block is not None and raw.strip() and indent > block:
            lines.append(raw.strip())
            continue
        block = None
        match = re.match(r"^(\s*)(?:- )?run: (.*)$", raw)
        if match and match.group(2).strip() == "|":
            block = len(match.group(1))
        elif match:
            lines.append(match.group(2).strip())
    return [re.sub(r'\s*>> "\$GITHUB_STEP_SUMMARY"$', "", line) for line in lines]


def commands(program: str) -> list[list[str]]:
    return [shlex.split(line) for line in run_lines() if line.startswith(program + " ")]


def test_the_workflow_runs_a_sweep_two_compares_a_summary_each_and_the_gpu_tests():
    assert [c[:2] for c in commands("trtcap")] == [["trtcap", "sweep"], ["trtcap", "compare"], ["trtcap", "compare"],
                                                    ["trtcap", "compare"]]
    assert len(commands("python")) == 1 and len(commands("pip")) == 4  # pytest-trtcap and the project, per job


@pytest.mark.parametrize("index", range(4))
def test_each_trtcap_command_is_accepted_by_the_command_line(index):
    args = commands("trtcap")[index][1:]
    cut = args.index("--") if "--" in args else len(args)
    build_parser().parse_args(args[:cut])  # a wrong flag or format exits here
    check_pytest_args(args[cut + 1:])  # what a sweep refuses after --


def test_each_plugin_option_the_workflow_passes_to_pytest_is_one_of_the_plugins():
    ours = {spec.option for spec in SPECS}
    given = [a for cmd in commands("python") + commands("trtcap") for a in cmd if a.startswith("--trt")]
    assert given and set(given) <= ours, set(given) - ours


def test_the_summary_steps_read_the_records_a_sweep_writes_and_print_markdown(swept):
    suite, out, proc = swept
    assert proc.returncode in (0, 1), proc.stderr
    compares = [c for c in commands("trtcap") if c[1] == "compare" and not c[3].endswith(".xml")]
    assert compares
    for cmd in compares:
        paths = [str(out / Path(p).name) for p in cmd[2:4]]
        assert all(Path(p).is_file() for p in paths), (paths, sorted(x.name for x in out.iterdir()))
        done = trtcap(*cmd[1:2], *paths, *cmd[4:], cwd=suite)
        assert done.returncode == 1, done.stderr  # the suite has a test failing on 7.5 only
        assert done.stdout.startswith("### trtcap compare\n"), done.stdout[:500]
        assert "\n| regression | " in done.stdout, done.stdout


# --- the workflow as GitHub reads it ---------------------------------------------------------------------------


def _validate(path: Path) -> subprocess.CompletedProcess:
    """check-jsonschema against the GitHub workflow schema it ships (SchemaStore's), offline."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(path)], capture_output=True, text=True)


def _workflow() -> dict:
    from ruamel.yaml import YAML

    return YAML(typ="safe").load(WORKFLOW.read_text())


def test_the_workflow_is_valid_against_githubs_workflow_schema(tmp_path):
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (the test extra) ships GitHub's workflow schema")
    done = _validate(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"  # the same check refuses a workflow GitHub would refuse
    broken.write_text(WORKFLOW.read_text().replace("    runs-on: ubuntu-latest\n", "    runs-on: 3.5\n    stepz: []\n"))
    refused = _validate(broken)
    assert refused.returncode != 0 and "cpu-lane" in refused.stdout, refused.stdout


def test_the_gpu_job_runs_whether_or_not_the_lane_failed():
    """``needs`` alone skips a job whose needed job failed: the GPU job would not run on exactly the pull requests
    where the lane finds an arm-specific failure. Its condition runs it unless the workflow is cancelled, and the
    steps that read the lane's records run only where there are records."""
    pytest.importorskip("ruamel.yaml", reason="check-jsonschema (the test extra) brings the YAML reader")
    gpu = _workflow()["jobs"]["gpu"]
    assert gpu["needs"] == "cpu-lane"
    assert gpu["if"].replace(" ", "") in ("${{!cancelled()}}", "${{always()}}", "always()", "!cancelled()")
    readers = [step for step in gpu["steps"] if "sweep-out/" in step.get("run", "")]
    assert readers and all("hashFiles('sweep-out/arm-8.9.json')" in step["if"] for step in readers)
    download = next(step for step in gpu["steps"] if step.get("uses", "").startswith("actions/download-artifact"))
    assert download.get("continue-on-error") is True


def test_the_project_is_installed_only_where_it_has_packaging_metadata_and_the_lane_doc_installs_alike():
    pytest.importorskip("ruamel.yaml", reason="check-jsonschema (the test extra) brings the YAML reader")
    lane_doc = (WORKFLOW.parent.parent / "cpu-lane.md").read_text(encoding="utf-8")
    documented = re.findall(r"- run: (pip install .*)", lane_doc)
    for name, job in _workflow()["jobs"].items():
        installs = [step for step in job["steps"] if step.get("run", "").startswith("pip install")]
        assert [step["run"] for step in installs] == ["pip install -e './pytest-trtcap[rtx]'", "pip install -e ."], name
        assert "hashFiles('pyproject.toml', 'setup.py', 'setup.cfg')" in installs[1]["if"], name
        assert documented == [installs[0]["run"]], name  # the lane's job installs pytest-trtcap by the same line
