"""Collector reports (``pytest_trtcap.markers``): a capability marker given arguments fails the collection
of the module or class it is used in, naming the test and the arguments, wherever the marker is applied and
whether or not the session gave any setting."""

from __future__ import annotations

import pytest

IN_A_CLASS = """
import pytest

class TestBox:
    pytestmark = [pytest.mark.trt_conv3d(depth=3)]

    def test_in_class(self):
        pass
"""

AT_MODULE_LEVEL = """
import pytest

pytestmark = pytest.mark.trt_bf16("module-level")

@pytest.mark.trt_fp32_gemm(7)
def test_marked():
    pass
"""


@pytest.mark.parametrize("args", [(), ("--trt-target-sm", "7.5")], ids=["nothing given", "targets given"])
def test_markers_given_arguments_fail_collection_naming_each_use(pytester: pytest.Pytester, args: tuple) -> None:
    pytester.makepyfile(test_class=IN_A_CLASS, test_module=AT_MODULE_LEVEL, test_other="def test_fine():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly",
                                           "--continue-on-collection-errors", *args)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines_random([
        "*test_class.py::TestBox::test_in_class: @pytest.mark.trt_conv3d takes no arguments, got (depth=3)*",
        "*test_module.py::test_marked: @pytest.mark.trt_fp32_gemm takes no arguments, got (7)*",
        "*test_module.py::test_marked: @pytest.mark.trt_bf16 takes no arguments, got ('module-level')*",
    ])


def test_markers_without_arguments_collect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.trt_bf16\n@pytest.mark.trtcap_no_isolation\n"
                        "def test_marked():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
