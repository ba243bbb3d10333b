"""``trtcap_guards.import_hook``: armed, it answers the device queries and runs its callbacks at the moment
torch_tensorrt is first imported, then steps aside; a lookup alone does not disarm it; it refuses once Torch-TensorRT
is imported. Each case runs in a fresh process (Torch-TensorRT imports once per process)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ARMED = """
import importlib.util, sys
import trtcap_guards as guards
from trtcap_guards import import_hook

seen = []
assert guards.install_import_hook(answer=True, after=[lambda m: seen.append(m.__name__)], capability=(7, 5))
assert importlib.util.find_spec("torch_tensorrt") is not None  # a lookup alone leaves it armed
assert any(isinstance(f, import_hook._ImportHook) for f in sys.meta_path)
import torch_tensorrt
assert seen == ["torch_tensorrt"], seen
assert not any(isinstance(f, import_hook._ImportHook) for f in sys.meta_path)  # stepped aside
import torch
assert torch.cuda.get_device_capability() == (7, 5)
status = guards.gpu_less_import_status()
assert status.applied and status.capability == (7, 5), status
assert guards.install_import_hook() is False  # already imported: nothing to arm
print("ARMED OK")
"""

OFF = """
import sys
import trtcap_guards as guards
from trtcap_guards import import_hook

assert guards.install_import_hook(answer=False)
assert guards.gpu_less_import_status().detail == "off"
guards.remove_import_hook()
guards.remove_import_hook()  # twice is harmless
assert not any(isinstance(f, import_hook._ImportHook) for f in sys.meta_path)
assert "torch" not in sys.modules and "torch_tensorrt" not in sys.modules  # arming imports nothing
print("OFF OK")
"""


@pytest.mark.parametrize("code, expect", [(ARMED, "ARMED OK"), (OFF, "OFF OK")], ids=["armed", "off"])
def test_the_import_hook(code: str, expect: str) -> None:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert expect in proc.stdout, proc.stdout[-2000:] + proc.stderr[-3000:]


LOADER_API = """
import importlib.util
import pathlib
import pkgutil


def test_torch_tensorrt_keeps_its_loader_api():
    import torch_tensorrt

    init = pathlib.Path(torch_tensorrt.__file__)
    assert pkgutil.get_data("torch_tensorrt", "_version.py") == init.with_name("_version.py").read_bytes()
    loader = importlib.util.find_spec("torch_tensorrt").loader
    assert loader.is_package("torch_tensorrt")
    assert loader.get_filename("torch_tensorrt") == str(init)
    assert loader.get_source("torch_tensorrt") == init.read_text()
"""


def test_torch_tensorrt_imported_through_the_armed_hook_keeps_its_loader_api(pytester: pytest.Pytester) -> None:
    """The plugin arms the hook in every pytest run: the package it imports must answer ``pkgutil.get_data``,
    ``is_package``, ``get_filename`` and ``get_source`` as it does without the plugin (its spec's loader is
    pytest's and importlib's way to its files)."""
    pytester.makepyfile(test_loader=LOADER_API)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.usefixtures("tt")  # imported already: a hook that slipped through would do nothing
@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"capability": (7.9, 5)}, r"^install_import_hook: invalid compute capability \(7\.9, 5\)"),
        ({"capability": "7.5"}, r"^install_import_hook: invalid compute capability '7\.5'"),
        ({"after": [5]}, r"^install_import_hook: after must be callables, got 5"),
    ],
)
def test_bad_arguments_are_refused_when_the_hook_is_installed_not_at_the_import(kwargs, message):
    """A bad capability or callback would otherwise surface only inside ``import torch_tensorrt``, far from the
    call that gave it (a conftest's import failing with int()'s message)."""
    import trtcap_guards as guards

    with pytest.raises((TypeError, ValueError), match=message):
        guards.install_import_hook(**kwargs)
    assert not any(type(f).__name__ == "_ImportHook" for f in sys.meta_path)
