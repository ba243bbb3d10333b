"""The suites ``test_plugin_fixture_scopes`` runs: fixtures of wider scopes nested in one another that change the
guards' state and undo it. Each test asserts the targets it finds; each conftest prints the guards' state once every
fixture has ended."""

from typing import Dict, Tuple

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
SUITES: Dict[str, Tuple[Dict[str, str], int]] = {
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
