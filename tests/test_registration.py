"""Registration (``pytest_trtcap.plugin``): the entry point loads it and its header; ``-p no:trtcap`` leaves out
everything the plugin registers, fixtures included; loading it twice registers its fixtures once; loading it in a
run that never imports torch loads only what registration and configuration need (import state is checked in
fresh processes); and in-process runs leave the process as they found it (``process_state_unchanged``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import trtcap_guards as guards

pytestmark = pytest.mark.usefixtures("process_state_unchanged")

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR

GEMM_TEST = """
import pytest

@pytest.mark.trt_fp32_gemm
def test_fp32_gemm():
    pass
"""

FIXTURE_TEST = """
def test_uses_a_fixture(trt_capability):
    assert trt_capability.reason
"""


def test_p_no_trtcap_leaves_the_fixtures_out(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'trt_capability' not found*"])


def test_the_fixtures_are_there_with_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(FIXTURE_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_loading_the_plugin_twice_lists_each_fixture_once(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("pytest_plugins = ['pytest_trtcap.plugin']\n")
    result = pytester.runpytest_subprocess("-p", "pytest_trtcap.plugin", "-p", "no:cacheprovider", "--fixtures")
    assert result.ret == 0
    listed = [line.split()[0] for line in result.stdout.lines if line.startswith("trt_capability")]
    assert listed == ["trt_capability"], result.stdout.str()


PROBE = """
import json, sys
import pytest
{run}
print("MODULES " + json.dumps(sorted(m for m in sys.modules if m.startswith(("trtcap_guards", "pytest_trtcap")))))
"""


def _loaded(run: str, cwd: str = ".") -> list:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(run=run)], capture_output=True, text=True, check=True,
                          cwd=cwd)
    line = next(line for line in proc.stdout.splitlines() if line.startswith("MODULES "))
    return json.loads(line[len("MODULES "):])


def test_importing_the_package_loads_none_of_its_modules() -> None:
    assert _loaded("import pytest_trtcap") == ["pytest_trtcap"]


def test_importing_the_plugin_loads_registration_and_configuration_only() -> None:
    loaded = _loaded("import pytest_trtcap.plugin")
    for later in ("pytest_trtcap.partitions", "pytest_trtcap.unittest_support", "pytest_trtcap.audit",
                  "pytest_trtcap.trt_close", "pytest_trtcap.session", "pytest_trtcap.settings",
                  "pytest_trtcap.report", "pytest_trtcap.hook_results", "pytest_trtcap.isolation.held_state"):
        assert later not in loaded, loaded


def test_a_collect_only_run_of_an_unrelated_suite_loads_no_predicate_registry_or_partitions(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_one():\n    pass\n")
    loaded = _loaded("pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider'])", cwd=str(pytester.path))
    assert "pytest_trtcap.plugin" in loaded  # the plugin did load
    for later in ("trtcap_guards.targets", "trtcap_guards.registry", "trtcap_guards.builder",
                  "trtcap_guards.validators", "pytest_trtcap.partitions", "pytest_trtcap.hook_results",
                  "pytest_trtcap.isolation.held_state", "pytest_trtcap.unittest_support"):
        assert later not in loaded, loaded


def test_the_public_names_load_on_first_use() -> None:
    code = ("import pytest_trtcap as p\n"
            "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
            "assert not missing, missing\n"
            "assert set(p.__all__) <= set(dir(p))\n"
            "from pytest_trtcap import *\n"
            "from pytest_trtcap.partitions import PartitionCounts as P\n"
            "assert PartitionCounts is P and issubclass(TrtcapLeakError, Exception)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    with pytest.raises(AttributeError, match="no_such_name"):
        import pytest_trtcap

        pytest_trtcap.no_such_name  # noqa: B018


@pytest.mark.parametrize("name", ["pytest_trtcap", "pytest_trtcap.plugin", "trtcap_guards"])
def test_naming_the_packages_in_pytest_plugins_is_harmless_under_warnings_as_errors(
    pytester: pytest.Pytester, name: str
) -> None:
    """The entry point imported them before the conftest names them: pytest must not warn that it cannot rewrite
    their asserts (they have none to rewrite)."""
    pytester.makeconftest(f"pytest_plugins = [{name!r}]\n")
    pytester.makepyfile("def test_one(trt_capability):\n    assert trt_capability.reason\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "error")
    result.assert_outcomes(passed=1)


def test_a_conftest_marking_our_hooks_optional_loads_where_the_plugin_is_disabled(pytester: pytest.Pytester) -> None:
    """What the README advises for projects that sometimes run with ``-p no:trtcap``: unmarked, pytest refuses the
    implementation as a hook nobody specified; marked optional, the suite runs (with the plugin, it still answers)."""
    hook = "def pytest_trtcap_target_capabilities(config):\n    return '8.9'\n"
    pytester.makepyfile("def test_one():\n    pass\n")
    pytester.makeconftest(hook)
    refused = pytester.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider")
    assert "unknown hook 'pytest_trtcap_target_capabilities'" in refused.stdout.str() + refused.stderr.str()
    pytester.makeconftest("import pytest\n\n@pytest.hookimpl(optionalhook=True)\n" + hook)
    pytester.runpytest_subprocess("-p", "no:trtcap", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    with_plugin = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    with_plugin.assert_outcomes(passed=1)
    with_plugin.stdout.fnmatch_lines(["trtcap: targets: 8.9 (from hook pytest_trtcap_target_capabilities);*"])


MAIN_THEN_META_PATH = """
import sys
import pytest
before = list(sys.meta_path)
pytest.main({args!r})
print("LEFT ON META_PATH " + repr([type(f).__name__ for f in sys.meta_path if f not in before]))
"""


@pytest.mark.parametrize("args", [["-p", "no:trtcap"], [], ["-p", "no:trtcap", "--trtcap-guards", "on"]],
                         ids=["named in pytest_plugins only", "and by the entry point", "with a setting"])
def test_a_run_that_named_the_plugin_in_pytest_plugins_leaves_no_import_hook_behind(
    pytester: pytest.Pytester, args: list
) -> None:
    """The torch_tensorrt import hook belongs to the session that armed it: a program that goes on after
    ``pytest.main`` (and imports torch_tensorrt later) must not have a finished session answer and guard it."""
    pytester.makeconftest("pytest_plugins = ['pytest_trtcap.plugin']\n")
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    script = pytester.makepyfile(run_main=MAIN_THEN_META_PATH.format(
        args=["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *args, "test_one.py"]))
    result = pytester.runpython(script)
    result.stdout.fnmatch_lines(["*1 passed*"])
    assert "LEFT ON META_PATH []" in result.stdout.lines, result.stdout.str()


# --- loading and disabling ---------------------------------------------------------------------------


def test_entry_point_loads_and_prints_the_header(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one(): pass")
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "trtcap: targets: not declared (host device decides at first use); backend: * (detected); "
        "targets Turing on TensorRT-RTX: pending host device; guards: *",
        f"trtcap: torch-tensorrt {guards.torch_tensorrt_version()} (*)",
        "trtcap: neutralized: none",
        "trtcap: gpu-less import: *; isolation: warn (default)",
        "plugins: *trtcap-*",
    ])


def test_p_no_trtcap_disables_header_options_and_markers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(GEMM_TEST)
    plain = pytester.runpytest("-p", "no:trtcap")
    plain.assert_outcomes(passed=1)
    assert "trtcap:" not in plain.stdout.str()

    option = pytester.runpytest("-p", "no:trtcap", "--trt-target-sm", "7.5")
    assert option.ret == USAGE_ERROR
    option.stderr.fnmatch_lines(["*unrecognized arguments: --trt-target-sm*"])

    # in a fresh process: pytest's global mark generator remembers markers this process has seen registered
    strict = pytester.runpytest_subprocess("-p", "no:trtcap", "--strict-markers")
    assert strict.ret == pytest.ExitCode.INTERRUPTED
    strict.stdout.fnmatch_lines(["*'trt_fp32_gemm' not found in `markers` configuration option*"])


def test_loading_the_plugin_imports_no_torch(pytester: pytest.Pytester) -> None:
    """A pytest11 plugin loads in every run of the environment: it must not import the heavy stack."""
    pytester.makeconftest(
        """
        import sys

        HEAVY = ("torch", "torch_tensorrt", "tensorrt", "tensorrt_rtx")

        def pytest_sessionfinish(session):
            loaded = [m for m in HEAVY if m in sys.modules]
            print("heavy modules at sessionfinish:", loaded or "none")
        """
    )
    pytester.makepyfile(
        """
        import sys
        import pytest

        def test_nothing_heavy_loaded(trt_capability, trt_targets_turing, expected_partition_counts):
            assert trt_targets_turing
            assert expected_partition_counts(default=(1, 0), turing=(1, 2)) == (1, 2)
            assert [m for m in ("torch", "torch_tensorrt", "tensorrt") if m in sys.modules] == []

        @pytest.mark.trt_fp32_gemm
        def test_skipped():
            pass
        """
    )
    result = pytester.runpytest_subprocess("--trt-target-sm", "7.5", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*heavy modules at sessionfinish: none*"])


def test_in_process_runs_undo_declarations_and_disarm_the_import_hook(pytester: pytest.Pytester) -> None:
    """``pytest.main`` twice in one fresh process (torch_tensorrt never imported): after a good run and after a
    run that stops on a usage error in ``pytest_configure``, nothing of the plugin stays behind."""
    pytester.makepyfile(GEMM_TEST)
    script = pytester.makepyfile(
        driver="""
        import sys
        import pytest
        import trtcap_guards as guards

        def leftovers():
            d = guards.state_snapshot()
            hooks = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_ImportHook"]
            return (d.targets, d.backend, guards.neutralized(), hooks)

        print("before:", leftovers())
        good = pytest.main(["-q", "-p", "no:cacheprovider", "--trt-target-sm", "7.5", "--trt-backend", "rtx",
                            "--trtcap-neutralize", "aten.mm.default",
                            "test_in_process_runs_undo_declarations_and_disarm_the_import_hook.py"])
        print("good run:", int(good), leftovers())
        bad = pytest.main(["-q", "-p", "no:cacheprovider", "--trt-backend", "cuda"])
        print("usage error:", int(bad), leftovers())
        print("torch imported:", "torch" in sys.modules)
        """
    )
    result = pytester.run(sys.executable, str(script))
    result.stdout.fnmatch_lines([
        "before: (None, None, (), [[]])",
        "good run: 0 (None, None, (), [[]])",
        "usage error: 4 (None, None, (), [[]])",
        "torch imported: False",
    ])
    result.stdout.fnmatch_lines(["*1 skipped*"])
