"""Dormant until used (``pytest_trtcap.plugin``; the session's state in ``pytest_trtcap.session_state``): a session
that never uses the plugin loads nothing beyond registration, configuration and the isolation drive (which the
plugin's import loads: isolation acts in every session), tests included; each way of using it wakes it. Import
state is checked in fresh processes; behaviour through pytester.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

PROBE = """
import json, sys
import pytest
rc = pytest.main({args!r})
print("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith(("trtcap_guards", "pytest_trtcap",
                                                                          "torch")))))
"""

#: What only a session that uses the plugin loads.
ACTIVE_ONLY = ("pytest_trtcap.session", "pytest_trtcap.isolation.held_state",
               "pytest_trtcap.settings", "pytest_trtcap.report", "trtcap_guards.targets",
               "trtcap_guards.registry", "trtcap_guards.capabilities", "trtcap_guards.gpuless")


def _loaded(cwd: str, *args: str, quiet: bool = True) -> list:
    args = ("-q",) * quiet + ("-p", "no:cacheprovider", *args)
    proc = subprocess.run([sys.executable, "-c", PROBE.format(args=list(args))],
                          capture_output=True, text=True, cwd=cwd, check=False)
    line = next((line for line in proc.stdout.splitlines() if line.startswith("MODULES ")), None)
    assert line is not None, proc.stdout + proc.stderr
    return json.loads(line[len("MODULES "):])


UNRELATED = """
import pytest

@pytest.fixture(scope="module")
def resource():
    yield [1]

class TestThings:
    def test_a(self, resource):
        assert resource == [1]

@pytest.mark.parametrize("n", [1, 2])
def test_b(n, tmp_path):
    assert n
"""


def test_an_unrelated_suite_that_runs_its_tests_loads_nothing_of_the_active_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(UNRELATED)
    loaded = _loaded(str(pytester.path))
    assert "pytest_trtcap.plugin" in loaded  # the plugin did load and configure
    assert [m for m in ACTIVE_ONLY if m in loaded] == []
    assert not [m for m in loaded if m == "torch" or m.startswith("torch.")]


def test_a_quiet_run_of_an_unrelated_suite_loads_nothing_beyond_what_the_plugin_import_loaded(
    pytester: pytest.Pytester,
) -> None:
    """Everything a dormant session pays for is in the import (which the benchmark measures): nothing later."""
    pytester.makepyfile(UNRELATED)
    code = PROBE.replace("rc = pytest.main({args!r})", "import pytest_trtcap.plugin")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported = json.loads(proc.stdout.split("MODULES ", 1)[1])
    ran = _loaded(str(pytester.path))
    assert "pytest_trtcap.plugin" in imported
    assert sorted(set(ran) - set(imported)) == []


def test_the_report_header_and_a_fixture_read_the_guards_without_waking_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(UNRELATED + "\n\ndef test_reads(trt_capability):\n    assert trt_capability.reason\n")
    loaded = _loaded(str(pytester.path), "-v", quiet=False)
    assert "trtcap_guards.targets" in loaded and "pytest_trtcap.report" in loaded  # the header, the fixture
    woken = ("pytest_trtcap.session", "pytest_trtcap.isolation.held_state", "pytest_trtcap.settings")
    assert [m for m in woken if m in loaded] == []


#: What the report header of a plain run (``pytest``, no ``-q``) may load beyond the plugin's import: the header
#: itself, the session's settings (their defaults) it shows, the predicate that decides its line (named through the
#: guards' table of exports), and the look at whether Torch-TensorRT's registry is loaded.
HEADER = ("pytest_trtcap.report", "pytest_trtcap.session_state", "trtcap_guards.exports", "trtcap_guards.targets",
          "trtcap_guards.capabilities", "trtcap_guards.distributions", "trtcap_guards.live_registry",
          "trtcap_guards.undo")


def test_a_plain_run_of_an_unrelated_suite_loads_only_the_header_beyond_the_import(pytester: pytest.Pytester) -> None:
    """The default run shows one header line; it reads the guards' predicate, not their registry, builder or
    state (loading those cost a plain run 15 ms, ten times the plugin's import)."""
    pytester.makepyfile(UNRELATED)
    code = PROBE.replace("rc = pytest.main({args!r})", "import pytest_trtcap.plugin")
    imported = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout.split("MODULES ", 1)[1])
    proc = subprocess.run([sys.executable, "-c", PROBE.format(args=["-p", "no:cacheprovider"])],
                          capture_output=True, text=True, cwd=str(pytester.path), check=False)
    assert "trtcap: targets: not declared" in proc.stdout  # the header line was computed and shown
    ran = json.loads(proc.stdout.split("MODULES ", 1)[1])
    assert sorted(set(ran) - set(imported) - set(HEADER)) == []


def test_the_same_suite_under_a_setting_loads_the_active_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(UNRELATED)
    loaded = _loaded(str(pytester.path), "--trtcap-strict")
    assert "pytest_trtcap.session" in loaded and "pytest_trtcap.settings" in loaded


def test_a_marker_wakes_it_at_collection(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.trt_bf16\ndef test_marked():\n    pass\n")
    loaded = _loaded(str(pytester.path), "--collect-only")
    assert "pytest_trtcap.session" in loaded


# --- behaviour once woken --------------------------------------------------------------------------------------

FIRST_USE_IN_A_BODY = """
import trtcap_guards as guards

def test_declares_and_leaves_it():
    guards.declare_targets("8.9", origin="a leaky test")

def test_sees_nothing_declared():
    assert guards.capability_decision(probe_host=False).targets == ()
"""


def test_a_leak_by_the_first_use_of_the_guards_in_a_test_body_is_named_and_undone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIRST_USE_IN_A_BODY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-W",
                                           "error::pytest_trtcap.TrtcapLeakWarning")
    result.assert_outcomes(passed=2, errors=1)  # the leaker errors in teardown; the next test sees it undone
    result.stdout.fnmatch_lines([
        "*test_declares_and_leaves_it leaked global state*guards: declared targets 8.9 (from a leaky test)*"])


FIRST_USE_IN_A_FIXTURE = """
import pytest
import trtcap_guards as guards

@pytest.fixture
def on_turing():
    with guards.declare_targets("7.5", origin="fixture"):
        yield

def test_uses_it(on_turing):
    assert guards.capability_decision().targets_turing

def test_after_it():
    assert guards.capability_decision(probe_host=False).targets == ()
"""


def test_a_fixture_that_first_uses_the_guards_and_cleans_up_is_no_leak(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIRST_USE_IN_A_FIXTURE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-W",
                                           "error::pytest_trtcap.TrtcapLeakWarning")
    result.assert_outcomes(passed=2)
    assert "leaked" not in result.stdout.str()


def test_a_conftest_in_a_subfolder_implementing_the_state_hook_is_held(pytester: pytest.Pytester) -> None:
    """Found during collection, after configure: the session wakes before the first test."""
    pytester.makepyfile(cache="CACHE = []\n")
    sub = pytester.mkpydir("sub")
    (sub / "conftest.py").write_text(
        "import cache\n\n"
        "def pytest_trtcap_isolated_state(config):\n"
        "    def restore(saved):\n"
        "        cache.CACHE[:] = saved\n"
        "    return [('cache', lambda: list(cache.CACHE), restore)]\n")
    (sub / "test_it.py").write_text(
        "import cache\n\n"
        "def test_leaks():\n    cache.CACHE.append(1)\n\n"
        "def test_clean():\n    assert cache.CACHE == []\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_leaks*leaked global state*cache*"])
