"""Shared fixtures for the guards tests: real Torch-TensorRT, declared targets, and leak-proof guard state."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import trtcap_guards as guards

pytest_plugins = ["pytester", "runs_helpers"]  # runs_helpers: the `swept` fixture of the trtcap command tests

sys.path.insert(0, os.path.dirname(__file__))  # tests/trt_models.py, importable from every test module

# A shell that sets PYTHONDONTWRITEBYTECODE (the reference machine does) would have each of the hundreds of Python
# processes these tests start compile the plugin's source again. They keep Python's default: bytecode caches,
# which the checkout ignores and the sdist leaves out. Tests about uncached loads set the variable themselves.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

try:  # keep property tests quick on 2 cores; the examples are cheap, the ceiling is the count
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "trtcap",
        max_examples=150,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    settings.load_profile("trtcap")
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass


@pytest.fixture(autouse=True)
def no_trtcap_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's shell must not steer these runs."""
    from pytest_trtcap.settings import SPECS

    for spec in SPECS:
        monkeypatch.delenv(spec.env, raising=False)
    for name in ("COLUMNS", "LINES"):  # the table width: a test that needs one sets it (a shell, or readline, may)
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's runs (in process and in subprocesses) leave hypothesis' pytest plugin out.

    No scenario here uses it, and loading it imports hypothesis: 0.15 s of CPU in each of the hundreds of pytest
    processes these tests start. pytester removes ``PYTEST_ADDOPTS`` when it starts, so a developer's is never read
    here; this one names that plugin only. trtcap still loads beside hypothesis' plugin in this project's own run,
    the lane's and the benchmarks'.
    """
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
    return pytester


@pytest.fixture(scope="session")
def tt() -> Any:
    """``torch_tensorrt``, imported through guards (answers the two device queries on a CUDA-less host)."""
    return guards.import_torch_tensorrt()


@pytest.fixture(scope="session")
def converter_registry(tt: Any) -> Any:
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    return DYNAMO_CONVERTERS


@pytest.fixture(scope="session")
def aten_converters(converter_registry: Any) -> dict:
    """The dict the decorator and the singleton share (target -> list of ConverterSupport)."""
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_ATEN_CONVERTERS

    assert any(r is DYNAMO_ATEN_CONVERTERS for r in converter_registry.registries)
    return DYNAMO_ATEN_CONVERTERS


def registry_snapshot(table: dict) -> dict:
    """target -> a copy of its candidate list (the ConverterSupport objects themselves, for identity checks)."""
    return {target: list(entries) for target, entries in table.items()}


@pytest.fixture(autouse=True)
def _guards_isolation(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test starts with no guards installed and ends with the guards, neutralize state and declarations
    as found (the declared backend is always reset).

    The outer environment's TRTCAP_* variables are removed so a developer's shell cannot steer a test.
    """
    monkeypatch.delenv(guards.ENV_TARGETS, raising=False)
    monkeypatch.delenv(guards.ENV_BACKEND, raising=False)
    before = guards.state_snapshot()
    was_installed = guards.is_installed()  # e.g. by the trtcap plugin under ``-o trtcap_guards=on``
    guards.uninstall()  # every test starts from the stock registry, whatever the ini says
    try:
        yield
    finally:
        guards.uninstall()
        guards.restore_state(before)
        guards.declare_backend(None)  # the declared backend is reset whatever the test did
        if was_installed:  # hand back what the plugin (or whoever) had installed
            guards.install()


class TargetsFactory:
    """``targets("7.5")`` declares targets (``guards.declare_targets``) until the test ends; nests and undoes."""

    def __init__(self, stack: contextlib.ExitStack) -> None:
        self._stack = stack
        self.declared: list[Any] = []

    def __call__(self, spec: Any, origin: str = "test") -> Any:
        handle = self._stack.enter_context(guards.declare_targets(spec, origin=origin))
        self.declared.append(spec)
        return handle

    @property
    def current(self) -> tuple[tuple[int, int], ...]:
        return guards.capability_decision(probe_host=False).targets


@pytest.fixture
def targets(request: pytest.FixtureRequest) -> Iterator[TargetsFactory]:
    """Factory for declared targets.

    ``@pytest.mark.parametrize("targets", ["7.5"], indirect=True)`` declares one up front.
    """
    with contextlib.ExitStack() as stack:
        factory = TargetsFactory(stack)
        param = getattr(request, "param", None)
        if param is not None:
            factory(param)
        yield factory
    # ExitStack undid every declaration, innermost first


@pytest.fixture
def guarded(tt: Any) -> Iterator[tuple[str, ...]]:
    """Guards installed in the live registry for the test, uninstalled after it (a fixture undoes its own change)."""
    names = guards.install()
    yield names
    guards.uninstall()


@pytest.fixture
def registry_guard(aten_converters: dict) -> Iterator[dict]:
    """Restores the converter dict in place (same dict and list objects) after a test that edits it."""
    snapshot = registry_snapshot(aten_converters)
    lists = {target: entries for target, entries in aten_converters.items()}
    try:
        yield aten_converters
    finally:
        guards.uninstall()
        for target in list(aten_converters):
            if target not in snapshot:
                del aten_converters[target]
        for target, entries in snapshot.items():
            lst = lists[target]
            lst[:] = entries
            aten_converters[target] = lst


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that declare targets through the ``targets`` factory change the guards' declarations in their body
    and rely on the fixture's teardown to undo them; under the plugin's rule (a test is held until its teardown
    starts) that is a leak of the test. ``_guards_isolation`` already restores the guards' state for them."""
    for item in items:
        if "targets" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.trtcap_no_isolation)


def _import_hooks() -> list:
    return [f for f in sys.meta_path if type(f).__name__ == "_ImportHook"]


@pytest.fixture
def process_state_unchanged() -> Iterator[None]:
    """Inline runs share this process: the plugin must undo its declarations at unconfigure."""
    before = guards.state_snapshot(fired=False)
    hooks = _import_hooks()
    yield
    after = guards.state_snapshot(fired=False)
    assert (after.targets, after.targets_origin, after.backend, after.backend_origin) == (
        before.targets, before.targets_origin, before.backend, before.backend_origin
    ), "an inline run left a process-wide declaration behind"
    assert after.neutralized == before.neutralized, "an inline run left guards neutralized"
    assert _import_hooks() == hooks, "an inline run left its torch_tensorrt import hook in sys.meta_path"
