"""How a leak is named and reported (``pytest_trtcap.isolation``). The leaks themselves, found around real tests,
fixtures and set-up methods, are tested through pytester with the isolation."""

import warnings

import pytest

from pytest_trtcap.isolation import TrtcapLeakError, TrtcapLeakWarning, fixture_subject, report_leak


@pytest.mark.parametrize(
    ("argname", "scope", "setup_for", "expected"),
    [
        ("f", "function", "", "t.py::test_b (fixture 'f', function scope)"),
        ("f", "function", "t.py::test_b", "t.py::test_b (fixture 'f', function scope)"),
        ("db", "module", "t.py::test_a", "t.py::test_b (fixture 'db', module scope, set up for t.py::test_a)"),
        ("_unittest_setUpClass_fixture_TestX", "class", "",
         "t.py::test_b (TestX.setUpClass/tearDownClass, class scope)"),
        ("_xunit_setup_module_fixture_t", "module", "", "t.py::test_b (t setup_module/teardown_module, module scope)"),
        ("_xunit_setup_method_fixture_TestY", "function", "",
         "t.py::test_b (TestY.setup_method/teardown_method, function scope)"),
    ],
)
def test_fixture_subject_names_the_fixture_or_the_set_up_method_the_user_wrote(argname, scope, setup_for, expected):
    assert fixture_subject(argname, scope, "t.py::test_b", setup_for) == expected


@pytest.fixture
def item(pytester):
    """A real item, from a config without the plugin: one with it would install the guards where an earlier test
    imported torch_tensorrt, and hold them until pytester's teardown, after this fixture's."""
    module = pytester.getmodulecol("def test_func():\n    pass\n", configargs=("-p", "no:trtcap"))
    [test] = module.collect()
    return test


def test_a_leak_warns_at_the_test_and_is_no_error_by_default(item):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        error = report_leak(item, "t.py::test_func", ["registry: aten.mm.default added", "x"], strict=False)
    assert error is None
    [warning] = caught
    assert warning.category is TrtcapLeakWarning
    assert str(warning.message) == "t.py::test_func leaked global state: registry: aten.mm.default added; x"
    assert warning.filename == str(item.config.rootpath / item.location[0])
    assert warning.lineno == item.location[1] + 1


def test_strict_turns_the_leak_into_an_error_naming_the_setting(item):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        error = report_leak(item, "t.py::test_func", ["x changed"], strict=True)
    assert isinstance(error, TrtcapLeakError)
    assert str(error) == "trtcap: t.py::test_func leaked global state (--trtcap-strict): x changed"


def test_a_filter_that_makes_the_warning_an_error_returns_the_error_instead_of_raising(item):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TrtcapLeakWarning)
        error = report_leak(item, "t.py::test_func", ["x changed"], strict=False)
    assert isinstance(error, TrtcapLeakError)
    assert str(error) == ("trtcap: t.py::test_func leaked global state (TrtcapLeakWarning is an error under the "
                          "warnings filter): x changed")
