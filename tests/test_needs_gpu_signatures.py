"""The signature table of ``pytest_trtcap.needs_gpu``, on exceptions the real stack raises on this CPU host.

Each signature is reproduced for real (torch without a driver, Torch-TensorRT 2.14 building an engine, a
CUDA-only kernel), and each "never converted" case too: the test's own assertion, a Python error raised while
handling a device error, the same text raised by the test itself, a CPU-less kernel that is not CUDA-only.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_trtcap import needs_gpu

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="reproduces what a host without a CUDA device raises")

HERE = str(Path(__file__).resolve())
PLUGIN_DOC = (Path(__file__).resolve().parent.parent / "docs" / "plugin.md").read_text(encoding="utf-8")


def _raised(fn: Callable[[], Any]) -> BaseException:
    with pytest.raises(BaseException) as excinfo:
        fn()
    return excinfo.value


def _signature(exc: BaseException) -> str | None:
    found = needs_gpu.classify(exc)
    return None if found is None else found.signature.name


# --- cuda-init ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("what, call", [
    ("tensor to cuda", lambda: torch.zeros(1, device="cuda")),
    ("module.cuda()", lambda: torch.nn.Linear(2, 2).cuda()),
    ("device properties", lambda: torch.cuda.get_device_properties(0)),
    ("synchronize", lambda: torch.cuda.synchronize()),
    ("event record", lambda: torch.cuda.Event().record()),
    ("stream", lambda: torch.cuda.Stream()),
])
def test_cuda_init_errors_need_a_gpu(what: str, call: Callable[[], Any]) -> None:
    exc = _raised(call)
    assert _signature(exc) == "cuda-init", (what, exc)


def test_reason_names_the_tests_own_line_and_the_errors_first_line() -> None:
    exc = _raised(lambda: torch.zeros(1, device="cuda"))  # the frame outside torch is this lambda's line
    lineno = sys._getframe().f_lineno - 1
    found = needs_gpu.classify(exc)
    assert found is not None and (found.path, found.lineno) == (HERE, lineno)
    reason = found.reason(str(Path(HERE).parent))
    first = str(exc).splitlines()[0]
    name = Path(HERE).name  # this file, relative to the rootdir given
    assert reason == f"trtcap: needs a GPU: {name}:{lineno}: RuntimeError: {first} (signature: cuda-init)"


def test_the_same_text_raised_by_the_test_is_a_failure() -> None:
    assert _signature(RuntimeError("Found no NVIDIA driver on your system")) is None
    assert _signature(_raised(lambda: (_ for _ in ()).throw(RuntimeError("No CUDA GPUs are available")))) is None


@pytest.mark.parametrize("what, call", [
    ("torch._check", lambda: torch._check(1 == 2, lambda: "No CUDA GPUs are available")),
    ("torch._assert", lambda: torch._assert(False, "Torch not compiled with CUDA enabled")),
    ("assert_close msg", lambda: torch.testing.assert_close(torch.zeros(1), torch.ones(1),
                                                            msg="Torch not compiled with CUDA enabled")),
    ("torch._check runtime text", lambda: torch._check(False, lambda: "Found no NVIDIA driver on your system")),
])
def test_the_tests_own_text_raised_by_a_torch_helper_is_a_failure(what: str, call: Callable[[], Any]) -> None:
    """A check the test wrote, raised by torch's check helpers, is the test's decision, not torch's CUDA set-up."""
    assert _signature(_raised(call)) is None, what


# --- cuda-only-kernel ---------------------------------------------------------------------------------------


def test_cuda_only_kernel_needs_a_gpu() -> None:
    q = torch.randn(1, 2, 4, 8)
    exc = _raised(lambda: torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False))
    assert type(exc) is NotImplementedError and _signature(exc) == "cuda-only-kernel"
    reason = needs_gpu.classify(exc).reason()
    assert "NotImplementedError: Could not run 'aten::_scaled_dot_product_efficient_attention' with arguments " \
           "from the 'CPU' backend." in reason
    assert len(reason) < 400  # the operator's list of backends is cut


def test_a_kernel_missing_on_cpu_that_cuda_lacks_too_is_a_failure() -> None:
    """An operator with a Meta kernel only: CPU is missing, but so is CUDA; a GPU would not help."""
    lib = torch.library.Library("trtcap_needs_gpu_test", "DEF")
    lib.define("meta_only(Tensor x) -> Tensor")
    lib.impl("meta_only", lambda x: x.clone(), "Meta")
    exc = _raised(lambda: torch.ops.trtcap_needs_gpu_test.meta_only(torch.ones(1)))
    assert type(exc) is NotImplementedError and "'CPU' backend" in str(exc)
    assert _signature(exc) is None


# --- trt-engine ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tt() -> Any:
    if importlib.util.find_spec("torch_tensorrt") is None:
        pytest.skip("needs Torch-TensorRT")
    import trtcap_guards as guards

    return guards.import_torch_tensorrt()


def test_engine_build_without_a_device_needs_a_gpu(tt: Any) -> None:
    """Torch-TensorRT's interpreter gets ``None`` from ``build_engine_with_config`` and asserts on it."""
    model, x = torch.nn.Sequential(torch.nn.ReLU()), torch.randn(2, 3)
    exported = torch.export.export(model, (x,))
    exc = _raised(lambda: tt.dynamo.compile(exported, inputs=[x], min_block_size=1, offload_module_to_cpu=True))
    assert type(exc) is AssertionError and _signature(exc) == "trt-engine"
    assert "AssertionError: `assert cuda_engine` in torch_tensorrt.dynamo.conversion._TRTInterpreter" in \
        needs_gpu.classify(exc).reason()


def test_engine_build_through_torch_compile_is_found_inside_backend_compiler_failed(tt: Any) -> None:
    torch._dynamo.reset()
    compiled = torch.compile(torch.nn.Sequential(torch.nn.ReLU()), backend="torch_tensorrt",
                             options={"min_block_size": 1, "pass_through_build_failures": True})
    exc = _raised(lambda: compiled(torch.randn(2, 3)))
    torch._dynamo.reset()
    assert type(exc).__name__ == "BackendCompilerFailed"
    assert _signature(exc) == "trt-engine"
    exc.__context__ = None  # the wrapped exception alone is enough
    assert _signature(exc) == "trt-engine"
    found = needs_gpu.classify(exc)
    assert found.path == HERE  # the test's line, not dynamo's


def test_the_compile_without_offload_fails_on_cuda_init_instead(tt: Any) -> None:
    model, x = torch.nn.Sequential(torch.nn.ReLU()), torch.randn(2, 3)
    exc = _raised(lambda: tt.dynamo.compile(torch.export.export(model, (x,)), inputs=[x], min_block_size=1))
    assert _signature(exc) == "cuda-init"


# --- the chain, and what is never converted -------------------------------------------------------------------


def _cuda_error() -> BaseException:
    return _raised(lambda: torch.zeros(1, device="cuda"))


def test_an_explicit_cause_raised_by_the_tests_own_code_is_a_failure() -> None:
    """``raise X from err`` in the test's own ``except``: the test decided what to raise, as with the implicit
    chain; the device error it names as the cause does not make the failure a skip."""
    def wrap() -> None:
        try:
            torch.zeros(1, device="cuda")
        except RuntimeError as e:
            raise ValueError("could not set up the model") from e

    exc = _raised(wrap)
    assert isinstance(exc, ValueError) and _signature(exc.__cause__) == "cuda-init"  # the device error is there
    assert _signature(exc) is None


def test_an_explicit_cause_raised_by_a_helper_of_the_test_is_a_failure(tmp_path: Path) -> None:
    """The same where the ``raise ... from`` is in a project helper the test calls (a module of its own)."""
    helper = _library_function("project_helpers_for_trtcap", RAISES_FROM, tmp_path)
    exc = _raised(lambda: helper())
    assert isinstance(exc, ValueError) and _signature(exc.__cause__) == "cuda-init"
    assert _signature(exc) is None


def test_a_cause_stored_by_the_tests_code_and_raised_later_is_a_failure() -> None:
    """The cause was caught in a frame that has returned; the ``raise ... from`` ran in the test's code."""
    def caught() -> BaseException:
        return _raised(lambda: torch.zeros(1, device="cuda"))

    def later() -> None:
        raise ValueError("no device earlier") from caught()

    assert _signature(_raised(later)) is None


def test_the_tests_own_assertion_is_a_failure_whatever_its_chain() -> None:
    def check() -> None:
        try:
            torch.zeros(1, device="cuda")
        except RuntimeError as e:
            raise AssertionError("expected a device") from e

    assert _signature(_raised(check)) is None
    assert _signature(_raised(lambda: pytest.fail("no device"))) is None


def test_a_python_error_while_handling_a_device_error_is_a_failure() -> None:
    def handle() -> None:
        try:
            torch.zeros(1, device="cuda")
        except RuntimeError:
            {}["missing"]

    exc = _raised(handle)
    assert isinstance(exc, KeyError) and exc.__context__ is not None
    assert _signature(exc) is None


def test_a_torch_error_raised_while_the_tests_own_except_handles_a_device_error_is_a_failure() -> None:
    """A genuine CPU-path bug (a shape error torch raises) in the fallback the test's ``except`` runs: the test
    handled the device error, so what follows is the test's failure, however deep in torch it was raised."""
    def fallback() -> None:
        model = torch.nn.Linear(4, 2)
        try:
            model = model.cuda()
        except RuntimeError:
            model(torch.ones(3, 5))

    exc = _raised(fallback)
    assert "shapes cannot be multiplied" in str(exc) and exc.__context__ is not None
    assert _signature(exc.__context__) == "cuda-init"  # the device error is there, in the implicit chain
    assert _signature(exc) is None


def test_torchs_assertion_raised_while_the_tests_own_except_handles_a_device_error_is_a_failure() -> None:
    def fallback() -> None:
        try:
            torch.ones(3, device="cuda")
        except RuntimeError:
            torch.testing.assert_close(torch.ones(3) * 2, torch.ones(3))

    exc = _raised(fallback)
    assert isinstance(exc, AssertionError) and exc.__context__ is not None
    assert _signature(exc) is None


def _library_function(module: str, source: str, tmp_path: Path) -> Callable[..., Any]:
    """``run`` defined in a module named ``module`` (a frame of that package, as the classifier reads frames)."""
    path = tmp_path / (module.replace(".", "_") + ".py")
    path.write_text(source, encoding="utf-8")
    namespace: dict = {"__name__": module, "torch": torch}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["run"]


RE_RAISES = """
def run(then=None):
    try:
        torch.zeros(1, device="cuda")
    except RuntimeError:
        if then is not None:
            return then()
        raise ValueError("could not set up the engine's device")
"""


def test_a_library_that_handles_a_device_error_and_raises_anew_still_needs_a_gpu(tmp_path: Path) -> None:
    """torch_tensorrt's own ``except`` turned the device error into another error: the device error counts."""
    run = _library_function("torch_tensorrt._trtcap_test_reraises", RE_RAISES, tmp_path)
    exc = _raised(lambda: run())
    lineno = sys._getframe().f_lineno - 1
    found = needs_gpu.classify(exc)
    assert isinstance(exc, ValueError) and exc.__cause__ is None
    assert found is not None and found.signature.name == "cuda-init"
    assert (found.path, found.lineno) == (HERE, lineno)  # the test's line, not the library's


RAISES_FROM = """
def run():
    try:
        torch.zeros(1, device="cuda")
    except RuntimeError as e:
        raise ValueError("could not set up the engine's device") from e
"""


def test_an_explicit_cause_raised_inside_the_library_is_followed(tmp_path: Path) -> None:
    """torch_tensorrt's own ``raise ... from err`` on a device error: the device error counts, at the test's line."""
    run = _library_function("torch_tensorrt._trtcap_test_raises_from", RAISES_FROM, tmp_path)
    exc = _raised(lambda: run())
    lineno = sys._getframe().f_lineno - 1
    found = needs_gpu.classify(exc)
    assert isinstance(exc, ValueError) and exc.__cause__ is not None
    assert found is not None and found.signature.name == "cuda-init"
    assert (found.path, found.lineno) == (HERE, lineno)  # the test's line, not the library's


def test_a_library_raising_from_a_device_error_inside_the_tests_except_is_a_failure(tmp_path: Path) -> None:
    """The test's ``except`` handled the device error and called into torch_tensorrt, which raised ``from`` it:
    the test's ``except`` decided, as with the implicit chain."""
    reraise = _library_function("torch_tensorrt._trtcap_test_wraps", WRAPS, tmp_path)

    def handled() -> None:
        try:
            torch.zeros(1, device="cuda")
        except RuntimeError as e:
            reraise(e)

    assert _signature(_raised(handled)) is None


WRAPS = """
def run(err):
    raise ValueError("wrapped") from err
"""


def test_the_tests_code_run_by_a_librarys_except_decides_the_failure(tmp_path: Path) -> None:
    """A library's ``except`` that calls back into the test's code: the error that code raises (here a shape
    error torch raises for it) is the test's failure, not the device error the library was handling."""
    run = _library_function("torch_tensorrt._trtcap_test_calls_back", RE_RAISES, tmp_path)
    exc = _raised(lambda: run(then=lambda: torch.nn.Linear(4, 2)(torch.ones(3, 5))))
    assert "shapes cannot be multiplied" in str(exc) and exc.__context__ is not None
    assert _signature(exc) is None


@pytest.mark.parametrize("exc", [AssertionError("3 != 2 : The graph should have 2 non-accelerated subgraphs"),
                                 TypeError("unsupported operand"), ValueError("bad"), KeyboardInterrupt()])
def test_other_errors_are_failures(exc: BaseException) -> None:
    assert _signature(exc) is None


def test_a_cyclic_chain_ends(tmp_path: Path) -> None:
    run = _library_function("torch_tensorrt._trtcap_test_cycle", RAISES_FROM, tmp_path)
    b = _raised(lambda: run())
    a = b.__cause__
    assert a is not None
    a.__cause__ = b  # raised inside torch.cuda: followed back to b, which was seen
    assert [type(e) for e in needs_gpu.chain(b)] == [ValueError, RuntimeError]


HOSTILE = """
def run(make):
    try:
        torch.zeros(1, device="cuda")
    except RuntimeError as e:
        raise make() from e
"""


def test_a_hostile_exception_is_left_a_failure(tmp_path: Path) -> None:
    class Hostile(RuntimeError):
        def __str__(self) -> str:
            raise ValueError("no text for you")

    run = _library_function("torch_tensorrt._trtcap_test_hostile", HOSTILE, tmp_path)
    found = needs_gpu.classify(_raised(lambda: run(Hostile)))
    assert found is not None and found.signature.name == "cuda-init" and found.reason()


def test_odd_text_is_printed_printable() -> None:
    exc = _cuda_error()
    exc.args = ("Found no NVIDIA driver on your system\x1b[31m FAKE\r\x00 \nPASSED second line",)
    reason = needs_gpu.classify(exc).reason()
    assert "\x1b" not in reason and "\r" not in reason and "\x00" not in reason and "\n" not in reason
    assert "second line" not in reason and "\\x1b[31m" in reason


# --- the table is documented --------------------------------------------------------------------------------


def test_every_signature_is_documented_in_the_module_and_the_plugin_docs() -> None:
    assert needs_gpu.signature_names() == ["cuda-init", "trt-engine", "cuda-only-kernel"]
    doc, readme = " ".join(needs_gpu.__doc__.split()), " ".join(PLUGIN_DOC.split())
    for name in needs_gpu.signature_names():
        assert f"``{name}``" in doc
        assert f"| `{name}` |" in readme
    for message in (*needs_gpu.CUDA_INIT_MESSAGES, needs_gpu.NOT_COMPILED):
        assert message in doc and f"`{message}`" in readme


def test_loading_a_serialized_engine_fails_on_cuda_init(tt: Any) -> None:
    """An engine TensorRT-RTX builds on CPU (``build_serialized_network``), loaded into Torch-TensorRT's module:
    the load needs the device before it ever deserialises."""
    import tensorrt as trt
    from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

    builder = trt.Builder(trt.Logger(trt.Logger.ERROR))
    network = builder.create_network(0)
    out = network.add_activation(network.add_input("x", trt.float32, (2, 3)), trt.ActivationType.RELU).get_output(0)
    out.name = "y"
    network.mark_output(out)
    serialized = builder.build_serialized_network(network, builder.create_builder_config())
    assert serialized is not None
    exc = _raised(lambda: TorchTensorRTModule(bytes(serialized), ["x"], ["y"], name="engine"))
    assert _signature(exc) == "cuda-init"
