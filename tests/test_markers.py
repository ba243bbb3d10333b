"""Capability markers as a user sees them: registration, skip reasons, where they may be put, bad usage.

Inline runs (nothing here imports torch); the ``--strict-markers`` check runs in a fresh process, because
pytest's global mark generator remembers every marker this process has already seen registered.
"""

from __future__ import annotations

import pytest

REASON = "trtcap: TensorRT-RTX cannot serve {what} on SM 7.5 (targets 7.5 from --trt-target-sm)"

MARKED_SUITE = '''
import unittest

import pytest

import trtcap_guards as guards


@pytest.mark.trt_fp32_gemm
def test_function():
    pass


@pytest.mark.trt_fp32_gemm
class TestClass:
    def test_a(self):
        pass

    def test_b(self):
        pass


@pytest.mark.trt_cdist_matmul
def test_cdist():
    pass


@pytest.mark.trt_conv3d
def test_conv3d():
    pass


@pytest.mark.trt_bf16
def test_bf16():
    pass


@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.trt_fp32_gemm)])
def test_param(x):
    pass


def test_unmarked():
    pass


@pytest.fixture
def expensive():
    if guards.trt_rtx_targets_turing():
        raise RuntimeError("fixture set up for a test its marker should have skipped")


@pytest.mark.trt_fp32_gemm
def test_skips_before_fixtures(expensive):
    pass


@pytest.mark.trt_fp32_gemm
class TestUnittestClass(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if guards.trt_rtx_targets_turing():
            raise RuntimeError("setUpClass ran for a class its marker should have skipped")

    def test_one(self):
        pass


class TestUnittestMethod(unittest.TestCase):
    @pytest.mark.trt_fp32_gemm
    def test_marked(self):
        pass

    def test_unmarked(self):
        pass
'''

MODULE_MARKED = '''
import pytest

pytestmark = pytest.mark.trt_conv3d


def test_module_one():
    pass


def test_module_two():
    pass
'''



@pytest.fixture
def marked_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_marked=MARKED_SUITE, test_module_marked=MODULE_MARKED)
    return pytester


def test_markers_are_listed_with_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "@pytest.mark.trt_fp32_gemm: skip when TensorRT-RTX cannot serve FP32 GEMM on the declared targets "
        "(SM 7.5; ops: *aten.linear.default*aten.mm.default*). Takes no arguments.",
        "@pytest.mark.trt_cdist_matmul: skip when TensorRT-RTX cannot serve the cdist matrix multiply on the "
        "declared targets (SM 7.5; ops: aten._cdist_forward.default). Takes no arguments.",
        "@pytest.mark.trt_conv3d: skip when TensorRT-RTX cannot serve 3D convolution on the declared targets "
        "(SM 7.5; ops: aten.convolution.default, tensorrt.conv_asym_pad.default). Takes no arguments.",
        "@pytest.mark.trt_bf16: skip when TensorRT-RTX cannot serve BF16 on the declared targets (SM 7.5; *). "
        "Takes no arguments.",
        "@pytest.mark.trtcap_no_isolation: "
        "do not hold and restore Torch-TensorRT's global registries around this test.",
    ])


def test_skips_at_7_5_on_functions_classes_modules_params_and_unittest(marked_suite: pytest.Pytester) -> None:
    result = marked_suite.runpytest("-rs", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=3, skipped=12)
    result.stdout.fnmatch_lines_random([
        "SKIPPED [[]*[]] test_marked.py:*: " + REASON.format(what="FP32 GEMM"),
        "SKIPPED [[]1[]] test_marked.py:*: " + REASON.format(what="the cdist matrix multiply"),
        "SKIPPED [[]1[]] test_marked.py:*: " + REASON.format(what="3D convolution"),
        "SKIPPED [[]1[]] test_marked.py:*: " + REASON.format(what="BF16"),
        "SKIPPED [[]*[]] test_module_marked.py:*: " + REASON.format(what="3D convolution"),
    ])
    result.stdout.fnmatch_lines([
        "*- trtcap -*",
        "capability skips: 12 (trt_bf16: 1, trt_cdist_matmul: 1, trt_conv3d: 3, trt_fp32_gemm: 7)",
    ])
    assert "RuntimeError" not in result.stdout.str()  # neither the fixture nor setUpClass ran


def test_the_reason_is_exact(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.trt_fp32_gemm
        def test_gemm():
            pass
        """
    )
    result = pytester.runpytest("--trt-target-sm", "7.5")
    reports = result.reprec.getreports("pytest_runtest_logreport")
    skipped = [r for r in reports if r.skipped]
    assert len(skipped) == 1
    assert skipped[0].longrepr[2] == (
        "Skipped: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 (targets 7.5 from --trt-target-sm)"
    )
    assert skipped[0].when == "setup"


def test_everything_runs_at_8_9(marked_suite: pytest.Pytester) -> None:
    result = marked_suite.runpytest("-rs", "--trt-target-sm", "8.9")
    result.assert_outcomes(passed=15)
    result.stdout.fnmatch_lines(
        ["trtcap: targets: 8.9 (from --trt-target-sm);*targets Turing on TensorRT-RTX: no; guards: *"]
    )
    assert "capability skips" not in result.stdout.str()


def test_everything_runs_at_7_5_on_standard_tensorrt(marked_suite: pytest.Pytester) -> None:
    result = marked_suite.runpytest("-rs", "--trt-target-sm", "7.5", "--trt-backend", "standard")
    result.assert_outcomes(passed=15)
    assert "capability skips" not in result.stdout.str()


def test_a_target_list_containing_7_5_skips(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(MODULE_MARKED)
    result = pytester.runpytest("-rs", "--trt-target-sm", "8.9,7.5")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([
        "SKIPPED [[]1[]] *:10: trtcap: TensorRT-RTX cannot serve 3D convolution on SM 7.5 "
        "(targets 8.9,7.5 from --trt-target-sm)",
    ])


def test_markers_work_under_strict_markers_in_a_fresh_process(marked_suite: pytest.Pytester) -> None:
    result = marked_suite.runpytest_subprocess(
        "--strict-markers", "-rs", "--trt-target-sm", "7.5", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=3, skipped=12)
    result.stdout.fnmatch_lines(["capability skips: 12 (*)"])


def test_a_marker_given_arguments_is_a_collection_error_naming_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad_args="""
        import pytest

        @pytest.mark.trt_fp32_gemm("7.5")
        def test_positional():
            pass

        @pytest.mark.trt_bf16(reason="no bf16")
        def test_keyword():
            pass

        @pytest.mark.trtcap_no_isolation(True)
        def test_no_isolation_with_args():
            pass

        @pytest.mark.trt_conv3d
        def test_fine():
            pass
        """,
        test_good="def test_good(): pass",
    )
    result = pytester.runpytest("--trt-target-sm", "8.9")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR collecting test_bad_args.py*",
        "trtcap: test_bad_args.py::test_positional: @pytest.mark.trt_fp32_gemm takes no arguments, got ('7.5')",
        "test_bad_args.py::test_keyword: @pytest.mark.trt_bf16 takes no arguments, got (reason='no bf16')",
        "test_bad_args.py::test_no_isolation_with_args: "
        "@pytest.mark.trtcap_no_isolation takes no arguments, got (True)",
    ])
    assert "test_fine:" not in result.stdout.str()

    # the rest of the session still runs when asked to
    going_on = pytester.runpytest("--trt-target-sm", "8.9", "--continue-on-collection-errors")
    going_on.assert_outcomes(passed=1, errors=1)


def test_a_class_marker_given_arguments_names_each_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.trt_cdist_matmul(p=2)
        class TestCdist:
            def test_one(self):
                pass
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "*test_a_class_marker_given_arguments_names_each_test.py::TestCdist::test_one: "
        "@pytest.mark.trt_cdist_matmul takes no arguments, got (p=2)",
    ])


#: Marker arguments whose repr a project wrote: one that raises, one that would print lines of its own (and a
#: terminal escape), one far too long for a message.
HOSTILE_REPRS = """
import pytest

class Raises:
    def __repr__(self):
        raise RuntimeError("repr refused")

class Forges:
    def __repr__(self):
        return "x)\\nPASSED test_forged.py::test_forged\\n\\x1b[31mred"

ARGS = {"raises": Raises(), "forges": Forges(), "huge": "y" * 5000}
"""


@pytest.mark.parametrize("case", ["raises", "forges", "huge"])
@pytest.mark.parametrize("when", ["collected", "added in pytest_collection_modifyitems"])
def test_a_marker_argument_with_a_hostile_repr_is_reported_on_one_bounded_line(
    pytester: pytest.Pytester, case: str, when: str
) -> None:
    """The arguments are the project's objects: their repr may raise, span lines or run to any length. The
    error still names the test and the marker, on one line of bounded length, and nothing else is printed as ours
    (no internal error, no forged result line, no raw terminal escape)."""
    pytester.makepyfile(hostile=HOSTILE_REPRS)
    pytester.syspathinsert()
    if when == "collected":
        pytester.makepyfile(test_it=f"import pytest\nfrom hostile import ARGS\n\n"
                                    f"@pytest.mark.trt_bf16(ARGS[{case!r}])\ndef test_one():\n    pass\n")
    else:
        pytester.makeconftest(f"import pytest\nfrom hostile import ARGS\n\ndef pytest_collection_modifyitems(items):\n"
                              f"    for item in items:\n"
                              f"        item.add_marker(pytest.mark.trt_bf16(ARGS[{case!r}]))\n")
        pytester.makepyfile(test_it="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--trt-target-sm", "8.9")
    out = result.stdout.str()
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED), out
    assert "INTERNALERROR" not in out and "repr refused" not in out
    assert "\x1b" not in out and not any(line.startswith("PASSED test_forged") for line in out.splitlines())
    # Our message runs from "trtcap:"; pytest's short summary puts "ERROR <nodeid> - Failed: " before it, and keeps
    # the message whole where it detects CI (CI or BUILD_NUMBER set), so only our part is measured.
    ours = [line[line.index("trtcap:"):] for line in out.splitlines()
            if "@pytest.mark.trt_bf16 takes no arguments" in line]
    assert ours and all(part.count("test_it.py::test_one") == 1 and len(part) < 1000 for part in ours), out


def test_a_declared_origin_cannot_forge_or_recolour_a_skip_reason(pytester: pytest.Pytester) -> None:
    """A skip reason names the targets' origin, which a project gives ``declare_targets``: escaped, on one line."""
    pytester.makeconftest(
        "import trtcap_guards as guards\n\n"
        "guards.declare_targets('7.5', origin='conftest\\n===== 99 passed in 0.01s =====\\x1b[2J')\n"
    )
    pytester.makepyfile("import pytest\n\n@pytest.mark.trt_fp32_gemm\ndef test_gemm():\n    pass\n")
    result = pytester.runpytest_subprocess("-rs", "-q", "-p", "no:cacheprovider")
    output = result.stdout.str()
    result.assert_outcomes(skipped=1)
    assert "\x1b" not in output
    assert not [line for line in output.splitlines() if line.startswith("===== 99")], output
    result.stdout.fnmatch_lines([
        r"SKIPPED [[]1[]] *: trtcap: TensorRT-RTX cannot serve FP32 GEMM on SM 7.5 "
        r"(targets 7.5 from conftest\n===== 99 passed in 0.01s =====\x1b[[]2J)",
    ])


TYPO_SUITE = '''
import pytest


@pytest.mark.trt_fp32_gem
def test_misspelt():
    pass


@pytest.mark.slow_and_unrelated
def test_other_unknown():
    pass
'''


def test_a_misspelt_marker_close_to_ours_is_named_with_the_marker_meant(pytester: pytest.Pytester) -> None:
    """The test still runs (pytest does not know the marker), so it would fail on Turing instead of being skipped:
    the warning names the test and the marker it is close to, and suggests --strict-markers. An unknown marker
    close to none of ours gets pytest's own warning only."""
    pytester.makepyfile(test_typo=TYPO_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--trt-target-sm", "7.5")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*test_typo.py:4: PytestUnknownMarkWarning: trtcap: test_typo.py::test_misspelt is marked "
        "trt_fp32_gem, which is no marker: did you mean trt_fp32_gemm? *--strict-markers*",
    ])
    assert "did you mean" not in result.stdout.str().split("test_misspelt is marked", 1)[1].split("\n", 1)[1]
