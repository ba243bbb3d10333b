"""Tests follow the tree: every product module has a test module of the same name.

`pytest_trtcap/<module>.py` is tested in `tests/test_<module>.py`, `pytest_trtcap/runs/<module>.py` in
`tests/test_runs_<module>.py` and `guards/<module>.py` in `tests/test_guards_<module>.py`, so whoever changes a module
knows where its tests are. Scenario suites that cross modules (xdist, notorch, ...) may exist besides.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# product package folder -> prefix of its modules' test modules
PACKAGES = {"pytest_trtcap": "test_", "pytest_trtcap/runs": "test_runs_", "guards": "test_guards_"}
NOT_MODULES = {"__init__.py", "__main__.py"}


def _missing(folder: str, prefix: str) -> list:
    modules = sorted(path.stem for path in (ROOT / folder).glob("*.py") if path.name not in NOT_MODULES)
    assert modules, folder  # the walk found the package: an empty list would pass vacuously
    wanted = {name: f"{prefix}{name}.py" for name in modules}
    return [f"{folder}/{name}.py -> tests/{test}" for name, test in wanted.items() if not (TESTS / test).is_file()]


def test_every_product_module_has_its_same_name_test_module():
    missing = [line for folder, prefix in PACKAGES.items() for line in _missing(folder, prefix)]
    assert not missing, "product modules without their test module:\n" + "\n".join(missing)
