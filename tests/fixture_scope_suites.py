"""The suites ``test_fixture_scopes`` runs: fixtures of wider scopes nested in one another that change the
guards' state and undo it. Each test asserts the targets it finds; each conftest prints the guards' state once every
fixture has ended."""


FINAL_STATE = '''
import trtcap_guards as guards


def origin():
    return guards.capability_decision(probe_host=False).origin


def pytest_terminal_summary(terminalreporter):
    """After every fixture's teardown: the guards must be as they started."""
    from trtcap_guards import state

    now = state.state_snapshot(fired=False)
    terminalreporter.write_line(f"guards at the end: {'as they started' if now == state.initial_state() else now}")
'''

SESSION = '''
import pytest

@pytest.fixture(scope="session")
def sess():
    with guards.declare_targets("8.9", origin="session"):
        yield
'''

SESSION_BY_HANDLE = '''
import pytest

@pytest.fixture(scope="session")
def sess():
    declared = guards.declare_targets("8.9", origin="session")
    yield
    declared.undo()
'''

#: name -> (files, tests that pass)
SUITES: dict[str, tuple[dict[str, str], int]] = {
    "class fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_z.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="class")
def cls_fix():
    with guards.declare_targets("7.5", origin="class"):
        yield

class TestA:
    def test_in(self, sess, cls_fix):
        assert origin() == "class"

def test_end(sess):
    assert origin() == "session"

def test_last():
    assert origin() == "session"
"""}, 3),
    "module fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_a.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_in(sess, mod):
    assert origin() == "module"
""", "test_b.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session"

def test_last():
    assert origin() == "session"
"""}, 3),
    "package fixture inside a session fixture, undone by handles": ({
        "conftest.py": FINAL_STATE + SESSION_BY_HANDLE,
        "pkg1/__init__.py": "",
        "pkg1/conftest.py": """
import pytest
from conftest import guards

@pytest.fixture(scope="package")
def pkg():
    declared = guards.declare_targets("7.5", origin="package")
    yield
    declared.undo()
""",
        "pkg1/test_x.py": """
from conftest import origin

def test_x(sess, pkg):
    assert origin() == "package"
""",
        "pkg2/__init__.py": "",
        "pkg2/test_y.py": """
from conftest import origin

def test_y(sess):
    assert origin() == "session"

def test_y2():
    assert origin() == "session"
"""}, 3),
    "class in module in session, undone by handles": ({"conftest.py": FINAL_STATE + SESSION_BY_HANDLE, "test_h.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod(sess):
    declared = guards.declare_targets("7.5", origin="module")
    yield
    declared.undo()

@pytest.fixture(scope="class")
def cls_fix():
    declared = guards.declare_targets("8.6", origin="class")
    yield
    declared.undo()

class TestA:
    def test_in(self, mod, cls_fix):
        assert origin() == "class"

def test_mod(mod):
    assert origin() == "module"
""", "test_i.py": """
from conftest import origin

def test_after(sess):
    assert origin() == "session"
"""}, 3),
    "parametrized class fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_p.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="class", params=["7.5", "8.6"])
def target(request, sess):
    with guards.declare_targets(request.param, origin="class " + request.param):
        yield request.param

class TestP:
    def test_one(self, target):
        assert origin() == "class " + target

    def test_two(self, target):
        assert origin() == "class " + target

def test_end(sess):
    assert origin() == "session"
"""}, 5),
    "parametrized module fixture inside a session fixture": ({"conftest.py": FINAL_STATE + SESSION, "test_q.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module", params=["7.5", "8.6"])
def target(request):
    declared = guards.declare_targets(request.param, origin="module " + request.param)
    yield request.param
    declared.undo()

def test_one(sess, target):
    assert origin() == "module " + target

def test_two(target):
    assert origin() == "module " + target
""", "test_r.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session"
"""}, 5),
    "module fixture inside a parametrized session fixture": ({"conftest.py": FINAL_STATE + """
import pytest

@pytest.fixture(scope="session", params=["8.9", "8.6"])
def sess(request):
    with guards.declare_targets(request.param, origin="session " + request.param):
        yield request.param
""", "test_a.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod(sess):
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_in(mod):
    assert origin() == "module"

def test_beside(sess):
    assert origin() == "module"
""", "test_b.py": """
from conftest import origin

def test_end(sess):
    assert origin() == "session " + sess
"""}, 6),
    "session fixture first requested while a module fixture is alive": ({"conftest.py": FINAL_STATE + SESSION,
                                                                         "test_m.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module")
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

def test_a(mod):
    assert origin() == "module"

def test_b(mod, sess):
    assert origin() == "session"
""", "test_n.py": """
from conftest import origin

def test_c(sess):
    assert origin() == "session"
"""}, 3),
    "unittest setUpClass inside autouse fixtures of every scope": ({"conftest.py": FINAL_STATE + """
import pytest

@pytest.fixture(scope="session", autouse=True)
def sess():
    with guards.declare_targets("8.9", origin="session"):
        yield
""", "test_u.py": """
import unittest
from conftest import guards, origin

class TestU(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.declared = guards.declare_targets("8.6", origin="setUpClass")

    @classmethod
    def tearDownClass(cls):
        cls.declared.undo()

    def test_a(self):
        self.assertEqual(origin(), "setUpClass")

    def test_b(self):
        with guards.declare_targets("7.5", origin="body"):
            pass
        self.assertEqual(origin(), "setUpClass")

class TestV(unittest.TestCase):
    def test_c(self):
        self.assertEqual(origin(), "session")
""", "test_v.py": """
import pytest
from conftest import guards, origin

@pytest.fixture(scope="module", autouse=True)
def mod():
    with guards.declare_targets("7.5", origin="module"):
        yield

class TestC:
    @pytest.fixture(scope="class", autouse=True)
    @classmethod
    def cls_fix(cls):
        with guards.declare_targets("8.0", origin="class"):
            yield

    @pytest.fixture(autouse=True)
    def fn(self):
        with guards.declare_targets("8.6", origin="function"):
            yield

    def test_in_class(self):
        assert origin() == "function"

def test_in_module():
    assert origin() == "module"
""", "test_w.py": """
from conftest import origin

def test_after():
    assert origin() == "session"
"""}, 6),
}

#: A fixture of module, package or class scope that adds to a held registry and never takes it out, while a session
#: fixture first requested by a later test of its scope adds to the same registry (an order pytest-randomly makes
#: routinely). Each test after such a scope asserts the registries are as at the session's start, plus what the
#: session fixtures still alive added; the conftest prints whether they are as they started once every fixture ended.
CASCADE: dict[str, str] = {"conftest.py": '''
import pytest
import torch
from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS, dynamo_tensorrt_converter
from torch_tensorrt.dynamo.lowering import _decomposition_groups as groups
from torch_tensorrt.dynamo.lowering.passes._aten_lowering_pass import ATEN_POST_LOWERING_PASSES, _aten_lowering_pass
from torch_tensorrt.dynamo.partitioning._atomic_subgraphs import ATOMIC_SUBGRAPHS, register_atomic_subgraph

aten = torch.ops.aten


def converters_now():
    return {k: list(v) for k, v in DYNAMO_ATEN_CONVERTERS.items()}


def now():
    return {"converters": converters_now(), "atomic": list(ATOMIC_SUBGRAPHS),
            "passes": list(ATEN_POST_LOWERING_PASSES.passes), "decompositions": dict(groups.TORCH_TRT_DECOMPOSITIONS)}


START = {}  # the registries as the first test's setup starts (the guards are installed by then)


def pytest_runtest_setup(item):
    if not START:
        START.update(now())


SESSION_TARGETS = (aten.lgamma.default, aten.mm.default, aten.special_entr.default)  # the session fixtures' own


def other_converters(converters):
    """The converters of targets no session fixture registers for: under xdist, any may be alive in a test."""
    return {k: v for k, v in converters.items() if k not in SESSION_TARGETS}


def implementations(target):
    return [c.converter_implementation for c in DYNAMO_ATEN_CONVERTERS.get(target, [])]


def drop_converter(target, fn):
    kept = [c for c in DYNAMO_ATEN_CONVERTERS[target] if c.converter_implementation is not fn]
    if kept:
        DYNAMO_ATEN_CONVERTERS[target][:] = kept
    else:
        del DYNAMO_ATEN_CONVERTERS[target]


class Pattern(torch.nn.Module):
    def forward(self, x):
        return aten.relu.default(x)


class SessionPattern(Pattern):
    pass


def session_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


def session_mm_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


def session_lowering_pass(gm, settings):
    return gm


def session_decomposition(x):
    return x


@pytest.fixture(scope="session")
def session_converter_fixture():
    dynamo_tensorrt_converter(aten.lgamma.default)(session_converter)
    yield
    drop_converter(aten.lgamma.default, session_converter)


@pytest.fixture(scope="session")
def session_atomic():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(SessionPattern)
    yield
    ATOMIC_SUBGRAPHS.remove((SessionPattern, (), True))


@pytest.fixture(scope="session")
def session_pass():
    _aten_lowering_pass(session_lowering_pass)
    yield
    ATEN_POST_LOWERING_PASSES.passes.remove(session_lowering_pass)


@pytest.fixture(scope="session")
def session_table():
    groups.TORCH_TRT_DECOMPOSITIONS[aten.sinc.default] = session_decomposition
    dynamo_tensorrt_converter(aten.mm.default)(session_mm_converter)
    yield
    del groups.TORCH_TRT_DECOMPOSITIONS[aten.sinc.default]
    drop_converter(aten.mm.default, session_mm_converter)


@pytest.fixture(scope="session")
def session_clean():
    dynamo_tensorrt_converter(aten.special_entr.default)(session_converter)
    yield
    drop_converter(aten.special_entr.default, session_converter)


def pytest_terminal_summary(terminalreporter):
    if START:  # tests ran in this process (not an xdist controller)
        terminalreporter.write_line(f"registries at the end: {'as they started' if now() == START else 'changed'}")
''', "test_a1_converter_module.py": '''
import pytest
from conftest import DYNAMO_ATEN_CONVERTERS, aten, dynamo_tensorrt_converter


def module_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


@pytest.fixture(scope="module")
def registers_for_the_module():
    dynamo_tensorrt_converter(aten.erfinv.default)(module_converter)
    yield


def test_first(registers_for_the_module):
    assert aten.erfinv.default in DYNAMO_ATEN_CONVERTERS


def test_second(registers_for_the_module, session_converter_fixture):
    assert aten.lgamma.default in DYNAMO_ATEN_CONVERTERS and aten.erfinv.default in DYNAMO_ATEN_CONVERTERS
''', "test_a2_after_converter_module.py": '''
from conftest import START, aten, converters_now, implementations, other_converters, session_converter


def test_converters_as_at_session_start(session_converter_fixture):
    assert implementations(aten.lgamma.default) == [session_converter]
    assert other_converters(converters_now()) == other_converters(START["converters"])
''', "test_b1_atomic_module.py": '''
import pytest
from conftest import ATOMIC_SUBGRAPHS, Pattern, register_atomic_subgraph


class ModulePattern(Pattern):
    pass


@pytest.fixture(scope="module", autouse=True)
def module_pattern():
    register_atomic_subgraph(init_args=(), is_core_aten=True)(ModulePattern)
    yield


def test_first():
    assert (ModulePattern, (), True) in ATOMIC_SUBGRAPHS


def test_second(session_atomic):
    assert (ModulePattern, (), True) in ATOMIC_SUBGRAPHS
''', "test_b2_after_atomic_module.py": '''
from conftest import ATOMIC_SUBGRAPHS, START, SessionPattern


def test_atomic_subgraphs_as_at_session_start(session_atomic):
    assert ATOMIC_SUBGRAPHS == START["atomic"] + [(SessionPattern, (), True)]
''', "test_c_package/__init__.py": "", "test_c_package/conftest.py": '''
import pytest
from conftest import _aten_lowering_pass


def package_lowering_pass(gm, settings):
    return gm


@pytest.fixture(scope="package")
def package_pass():
    _aten_lowering_pass(package_lowering_pass)
    yield
''', "test_c_package/test_c1.py": '''
def test_first(package_pass):
    pass
''', "test_c_package/test_c2.py": '''
def test_second(package_pass, session_pass):
    pass
''', "test_c_z_after_package.py": '''
from conftest import ATEN_POST_LOWERING_PASSES, START, session_lowering_pass


def test_passes_as_at_session_start(session_pass):
    assert ATEN_POST_LOWERING_PASSES.passes == START["passes"] + [session_lowering_pass]
''', "test_d_class.py": '''
import pytest
from conftest import (START, aten, dynamo_tensorrt_converter, groups, implementations, session_decomposition,
                      session_mm_converter)


def class_decomposition(x):
    return x


def class_mm_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


@pytest.fixture(scope="class")
def class_changes():
    groups.TORCH_TRT_DECOMPOSITIONS[aten.digamma.default] = class_decomposition
    dynamo_tensorrt_converter(aten.mm.default)(class_mm_converter)
    yield


class TestD:
    def test_first(self, class_changes):
        assert class_mm_converter in implementations(aten.mm.default)

    def test_second(self, class_changes, session_table):
        assert session_mm_converter in implementations(aten.mm.default)


def test_after_the_class(session_table):
    stock = [c.converter_implementation for c in START["converters"][aten.mm.default]]
    assert implementations(aten.mm.default) == stock + [session_mm_converter]
    assert groups.TORCH_TRT_DECOMPOSITIONS == {**START["decompositions"], aten.sinc.default: session_decomposition}
''', "test_e1_clean_module.py": '''
import pytest
from conftest import (ATOMIC_SUBGRAPHS, Pattern, aten, drop_converter, dynamo_tensorrt_converter,
                      register_atomic_subgraph)


class CleanPattern(Pattern):
    pass


def clean_converter(ctx, target, args, kwargs, name):
    raise NotImplementedError


@pytest.fixture(scope="module")
def cleans_up():
    dynamo_tensorrt_converter(aten.i0.default)(clean_converter)
    register_atomic_subgraph(init_args=(), is_core_aten=True)(CleanPattern)
    yield
    ATOMIC_SUBGRAPHS.remove((CleanPattern, (), True))
    drop_converter(aten.i0.default, clean_converter)


def test_first(cleans_up):
    pass


def test_second(cleans_up, session_clean):
    pass
''', "test_e2_after_clean_module.py": '''
from conftest import ATOMIC_SUBGRAPHS, DYNAMO_ATEN_CONVERTERS, aten, implementations, session_converter


def test_only_the_session_fixture_s_converter_is_left(session_clean):
    assert implementations(aten.special_entr.default) == [session_converter]
    assert aten.i0.default not in DYNAMO_ATEN_CONVERTERS
    assert not [e for e in ATOMIC_SUBGRAPHS if e[0].__name__ == "CleanPattern"]
'''}

#: The leaks that run names (who -> what), each once.
CASCADE_LEAKS = [
    "  test_a1_converter_module.py::test_second (fixture 'registers_for_the_module', module scope, set up for "
    "test_a1_converter_module.py::test_first) -> aten.erfinv.default: target added (1 converter)",
    "  test_b1_atomic_module.py::test_second (fixture 'module_pattern', module scope, set up for "
    "test_b1_atomic_module.py::test_first) -> added ATOMIC_SUBGRAPHS entry (ModulePattern, (), True)",
    "  test_c_package/test_c2.py::test_second (fixture 'package_pass', package scope, set up for "
    "test_c_package/test_c1.py::test_first) -> added lowering pass package_lowering_pass at index *",
    "  test_d_class.py::TestD::test_second (fixture 'class_changes', class scope, set up for "
    "test_d_class.py::TestD::test_first) -> aten.mm.default: 1 converter added; "
    "aten.digamma.default: decomposition added",
]
