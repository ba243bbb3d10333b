"""The isolation contract on generated suites: a run of each must name exactly the leaks the oracle predicts, and
every test must pass (a correct suite is never broken). ``.ci/isolation_contract.py`` runs many more examples over
each supported pytest, with and without xdist; here CI runs a fixed, seeded number on its own pytest."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import generated_suites as gen
import isolation_oracle as oracle
import pytest
from hypothesis import given, seed, settings

PYTHON = os.environ.get("TRTCAP_CONTRACT_PYTHON", sys.executable)
EXTRA = shlex.split(os.environ.get("TRTCAP_CONTRACT_ARGS", ""))
EXAMPLES = int(os.environ.get("TRTCAP_CONTRACT_EXAMPLES", "25"))
_OUTCOME = re.compile(r"(\d+) (passed|failed|errors?|skipped)")


def run_suite(suite: gen.Suite, where: Path, *args: str) -> subprocess.CompletedProcess:
    where.mkdir(exist_ok=True)
    (where / "pytest.ini").write_text("[pytest]\n")
    gen.write(suite, where)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRTCAP_", "PYTEST_"))}
    command = [PYTHON, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-v", "-rN", *args]
    return subprocess.run(command, cwd=where, env=env, capture_output=True, text=True, timeout=300)


def summary_of(output: str) -> list[str]:
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if re.fullmatch(r"-+ trtcap -+", line)), None)
    if start is None:
        return []
    return [line for line in lines[start + 1:] if line.startswith("  ")]


def nodeids_of(output: str) -> list[str]:
    return sorted(set(re.findall(r"(test_m\d\.py::\S+?)(?= PASSED| FAILED| ERROR|\s*$)", output, re.M)))


def check(suite: gen.Suite, where: Path, *args: str) -> None:
    result = run_suite(suite, where, *args)
    output = result.stdout + result.stderr
    context = f"\nsuite:\n{gen.source(suite)}\noutput:\n{output}"
    nodeids = nodeids_of(output)
    outcomes = {kind.rstrip("s"): int(n) for n, kind in _OUTCOME.findall(output.splitlines()[-1] if output else "")}
    assert result.returncode == 0 and outcomes.get("passed") == len(nodeids) > 0, f"a correct suite broke{context}"
    assert "error" not in outcomes and "failed" not in outcomes, context
    want = oracle.expected(suite, nodeids)
    named, unreadable = oracle.reported(summary_of(output), want)
    assert not unreadable, f"leak lines naming no unit of the contract: {unreadable}{context}"
    assert named == want, f"missing: {sorted(want - named)}\nunexpected: {sorted(named - want)}{context}"


@seed(20261206)
@settings(max_examples=EXAMPLES, derandomize=False)
@given(suite=gen.suites())
def test_generated_suites_report_exactly_the_leaks_the_contract_predicts(suite, tmp_path_factory) -> None:
    check(suite, tmp_path_factory.mktemp("suite") / "s", *EXTRA)


@pytest.mark.parametrize("undo", ["leak", "yield"])
def test_the_checker_sees_a_leak_the_oracle_predicts_and_no_leak_where_none_is(undo, tmp_path) -> None:
    """The harness itself: one module fixture and a dependent, leaking or not."""
    suite = gen.Suite([gen.Fixture("fx0_m", "module", undo), gen.Fixture("fx1_f", "function", "yield", ["fx0_m"])],
                      [gen.Test("test_0", "test_m0", "plain", uses=["fx1_f"]),
                       gen.Test("test_1", "test_m0", "plain", uses=["fx1_f"])])
    want = oracle.expected(suite, ["test_m0.py::test_0", "test_m0.py::test_1"])
    assert want == ({oracle.Named("fixture", "fx0_m", "fx0_m")} if undo == "leak" else set())
    check(suite, tmp_path / "suite")
