"""Tell a test that needs a GPU apart from a test that fails (``--trtcap-needs-gpu skip``).

On a CPU runner, Torch-TensorRT-style suites fail by the hundred for one reason no one can fix there: there is
no CUDA device. A lane that is red for that reason gets switched off. With ``skip``, a failure (or a module's
collection error) whose exception chain carries one of the signatures below, on a host where no CUDA device
exists, is reported as *skipped*, with a reason that starts ``trtcap: needs a GPU: `` and names the line of the
test's own code that needed it and the error. Nothing else is ever converted.

The signatures, each matched on one exception of the chain:

``cuda-init``
    torch finding no driver or device, raised inside ``torch.cuda`` (a test raising the same text, itself or
    through a general helper such as ``torch._check``, is not matched): a
    ``RuntimeError`` (``torch.AcceleratorError`` included) whose first line starts with one of
    ``CUDA_INIT_MESSAGES`` - lazy initialisation's "Found no NVIDIA driver on your system", "No CUDA GPUs are
    available", "CUDA driver initialization failed", and the CUDA runtime's "CUDA error: CUDA driver version is
    insufficient for CUDA runtime version" (a ``torch.cuda.Stream()`` without a driver) and "CUDA error: no
    CUDA-capable device is detected" - or the ``AssertionError`` "Torch not compiled with CUDA enabled".
``trt-engine``
    Torch-TensorRT creating an engine without a device: the interpreter's ``assert cuda_engine`` on the
    ``None`` that ``build_engine_with_config`` returns (``torch_tensorrt.dynamo.conversion._TRTInterpreter``).
    Loading a serialized engine (``TorchTensorRTModule(serialized_engine, ...)``) fails before it deserialises,
    on torch's CUDA initialisation: ``cuda-init``.
``cuda-only-kernel``
    a ``NotImplementedError`` "Could not run 'OP' with arguments from the 'CPU' backend" whose list of
    available backends names ``CUDA``: a kernel that exists for CUDA only.

The chain is followed through the ``inner_exception`` that ``torch._dynamo``'s ``BackendCompilerFailed`` wraps,
and through ``__cause__`` (explicit ``raise ... from``) and ``__context__`` only where torch/torch_tensorrt/
tensorrt's own code handled it and raised the new error (a library re-raising): where the test's own ``except``
(or its conftest's or project helper's, or its module's at import) handled the device error, what it then ran
into, or raised ``from`` it, is the test's failure. An ``AssertionError`` (or ``pytest.fail``) raised by the
test's own code is a failure whatever its chain: the test decided.

Nothing here imports torch: the host is probed (``trtcap_guards.targets.host_capabilities``) only after a
signature matched, by which time torch is imported anyway.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import pytest

from trtcap_guards.tooling import format_capability, host_capabilities

from .escaping import one_line

REASON_PREFIX = "trtcap: needs a GPU: "
#: Packages whose frames are "the library", not the test.
LIBRARY_PACKAGES = frozenset({"torch", "torch_tensorrt", "tensorrt", "tensorrt_rtx", "tensorrt_bindings"})
CUDA_INIT_MESSAGES = (
    "Found no NVIDIA driver on your system",
    "No CUDA GPUs are available",
    "CUDA driver initialization failed",
    "CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "CUDA error: no CUDA-capable device is detected",
)
NOT_COMPILED = "Torch not compiled with CUDA enabled"
_CPU_BACKEND = re.compile(r"^Could not run '([^']+)' with arguments from the 'CPU' backend")
_AVAILABLE = re.compile(r"is only available for these backends: \[([^\]]*)\]")
_MAX_TEXT = 200
_MAX_CHAIN = 32
#: The test runner's own packages, never "the test's line".
RUNNER_PACKAGES = frozenset({"_pytest", "pytest", "pluggy", "xdist", "execnet"})
_STDLIB = tuple(os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib"))


@dataclass(frozen=True)
class Signature:
    """One documented way a failure is caused by the missing device."""

    name: str  # as printed in skip reasons and the summary (and documented in the README's table)
    matches: Callable[[BaseException], bool]


@dataclass(frozen=True)
class NeedsGpu:
    """A failure decided to need a GPU: which signature, on which exception, and where the test needed it."""

    signature: Signature
    exception: BaseException
    path: str | None  # the innermost frame of the test's own code (absolute), if any
    lineno: int | None  # 1-based

    def reason(self, rootpath: str | None = None) -> str:
        where = "unknown location"
        if self.path is not None:
            shown = self.path
            if rootpath is not None:
                try:
                    shown = os.path.relpath(self.path, rootpath)
                except ValueError:  # another drive
                    shown = self.path
                if shown.startswith(".."):
                    shown = self.path
            where = f"{one_line(shown)}:{self.lineno}"
        return f"{REASON_PREFIX}{where}: {error_line(self.exception)} (signature: {self.signature.name})"


# --- the signatures -----------------------------------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc)
    return text.splitlines()[0] if text else ""


def innermost(tb: TracebackType | None) -> TracebackType | None:
    """The innermost entry of a traceback: the frame that raised."""
    last = None
    while tb is not None:
        last, tb = tb, tb.tb_next
    return last


def _raised_in(exc: BaseException, module: str, source: str) -> bool:
    """The exception's innermost frame is in ``module``, on a line whose source is ``source``."""
    tb = innermost(exc.__traceback__)
    if tb is None or tb.tb_frame.f_globals.get("__name__") != module:
        return False
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_globals).strip()
    return line == source


#: Where torch sets CUDA up: its lazy initialisation, streams, events and device queries all raise from here.
#: A message raised by a general helper (``torch._check``, ``torch.testing``) is the calling test's own text.
CUDA_MODULE = "torch.cuda"


def _is_cuda_init(exc: BaseException) -> bool:
    tb = innermost(exc.__traceback__)
    if tb is None:
        return False
    module = str(tb.tb_frame.f_globals.get("__name__") or "")
    if module != CUDA_MODULE and not module.startswith(CUDA_MODULE + "."):
        return False
    if isinstance(exc, RuntimeError):
        return _first_line(exc).startswith(CUDA_INIT_MESSAGES)
    return type(exc) is AssertionError and _first_line(exc) == NOT_COMPILED


def _is_trt_engine(exc: BaseException) -> bool:
    return type(exc) is AssertionError and _raised_in(
        exc, "torch_tensorrt.dynamo.conversion._TRTInterpreter", "assert cuda_engine"
    )


def _is_cuda_only_kernel(exc: BaseException) -> bool:
    if type(exc) is not NotImplementedError:
        return False
    text = str(exc)
    available = _AVAILABLE.search(text)
    return bool(_CPU_BACKEND.match(text)) and available is not None and "CUDA" in available.group(1).split(", ")


SIGNATURES: tuple[Signature, ...] = (
    Signature("cuda-init", _is_cuda_init),  # torch found no driver or device
    Signature("trt-engine", _is_trt_engine),  # Torch-TensorRT created or deserialised an engine without a device
    Signature("cuda-only-kernel", _is_cuda_only_kernel),  # a CUDA-only operator ran on CPU tensors
)


# --- the exception chain ---------------------------------------------------------------------------------------


def _in_library(tb: TracebackType | None) -> bool:
    return tb is not None and _package(tb) in LIBRARY_PACKAGES


def _package(tb: TracebackType) -> str:
    return str(tb.tb_frame.f_globals.get("__name__") or "").partition(".")[0]


def chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what caused it: ``__cause__``, ``BackendCompilerFailed.inner_exception``, and ``__context__``
    where a library raised while handling it; each exception once, at most ``_MAX_CHAIN``."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < _MAX_CHAIN:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        inner = getattr(current, "inner_exception", None)
        if type(current).__module__.startswith("torch._dynamo") and isinstance(inner, BaseException):
            todo.append(inner)
        if current.__cause__ is not None:
            if _library_handled(current, current.__cause__, explicit=True):
                todo.append(current.__cause__)
        elif current.__context__ is not None and not current.__suppress_context__ and _library_handled(
            current, current.__context__
        ):
            todo.append(current.__context__)


def _library_handled(exc: BaseException, linked: BaseException, explicit: bool = False) -> bool:
    """Whether torch/torch_tensorrt/tensorrt's own ``except`` turned ``linked`` (``exc``'s context, or its
    explicit cause) into ``exc``: the frame that caught ``linked`` (the outermost entry of its traceback) is the
    library's, ``exc`` passed through it, and no frame of the test's own code lies between that ``except`` and
    where ``exc`` was raised. A test's, its conftest's or project helper's ``except`` that runs into another error
    (a CPU fallback's shape bug, a numeric check) or raises its own ``from`` the device error decided the failure,
    however deep in torch that error was raised; so does the test's code that a library's ``except`` calls back.
    An explicit cause caught in a frame ``exc`` did not pass through (kept, then raised ``from`` later) counts
    where the library's code raised ``exc``."""
    linked_tb = linked.__traceback__
    handler = linked_tb.tb_frame if linked_tb is not None else None
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame is not handler:
        tb = tb.tb_next
    if tb is None and explicit:
        tb = innermost(exc.__traceback__)
    if not _in_library(tb):
        return False
    while tb is not None:
        if _is_test_frame(tb):
            return False
        tb = tb.tb_next
    return True


def _decided_by_the_test(exc: BaseException) -> bool:
    """An assertion (or ``pytest.fail``) the test's own code raised: a failure, whatever led to it."""
    failed = type(exc).__name__ == "Failed" and type(exc).__module__.startswith("_pytest")
    return (isinstance(exc, AssertionError) or failed) and not _in_library(innermost(exc.__traceback__))


def _is_test_frame(tb: TracebackType) -> bool:
    """Code of the project under test: not torch/torch_tensorrt/tensorrt, nor the runner (pytest, pluggy, the
    standard library's unittest, contextlib, importlib...), nor generated code (``<eval_with_key>.3``)."""
    filename = tb.tb_frame.f_code.co_filename
    if _package(tb) in LIBRARY_PACKAGES | RUNNER_PACKAGES or filename.startswith("<"):
        return False
    path = os.path.abspath(filename)
    return not path.startswith(_STDLIB) or f"{os.sep}site-packages{os.sep}" in path


def _test_location(*excs: BaseException) -> tuple[str | None, int | None]:
    """The innermost frame of the test's own code: the line that needed the device. Read from the first of
    ``excs`` whose traceback has one (the matched exception; else the outermost, e.g. around what dynamo wraps)."""
    for exc in excs:
        found: tuple[str | None, int | None] = (None, None)
        tb = exc.__traceback__
        while tb is not None:
            if _is_test_frame(tb):
                found = (os.path.abspath(tb.tb_frame.f_code.co_filename), tb.tb_lineno)
            tb = tb.tb_next
        if found[0] is not None:
            return found
    return None, None


def classify(exc: BaseException) -> NeedsGpu | None:
    """The signature this failure carries, or None. Pure: never probes the host, never raises."""
    try:
        if _decided_by_the_test(exc):
            return None
        for link in chain(exc):
            for signature in SIGNATURES:
                if signature.matches(link):
                    return NeedsGpu(signature, link, *_test_location(link, exc))
    except Exception:  # a hostile exception (a __str__ that raises...): leave the failure as it is
        return None
    return None


# --- text --------------------------------------------------------------------------------------------------------


def error_line(exc: BaseException) -> str:
    """``Type: first line``, printable, one line; a long line is cut at its first sentence, then at 200 chars."""
    line = _first_line(exc)
    if not line:
        tb = innermost(exc.__traceback__)
        if tb is not None:
            source = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno, tb.tb_frame.f_globals).strip()
            line = f"`{source}` in {tb.tb_frame.f_globals.get('__name__')}"
    if len(line) > _MAX_TEXT:
        sentence = line.find(". ")
        line = line[: sentence + 1] if 0 < sentence < _MAX_TEXT else line[:_MAX_TEXT] + "..."
    return one_line(f"{type(exc).__name__}: {line}" if line else type(exc).__name__)


def signature_names() -> list[str]:
    return [s.name for s in SIGNATURES]


# --- applied to pytest's reports --------------------------------------------------------------------------
# Called by the plugin only when the setting is ``skip`` and something failed, or for the verbose header. The host is
# probed (``trtcap_guards.targets.host_capabilities``, memoized) only after a signature matched: on a host with a
# CUDA device nothing is converted.


def _host_has_device(probe: bool = True) -> bool | None:
    caps = host_capabilities(probe=probe)
    return None if caps is None else bool(caps)


def _needs_gpu(excinfo: Any) -> NeedsGpu | None:
    if excinfo is None:
        return None
    found = classify(excinfo.value)
    if found is None or _host_has_device():
        return None
    return found


def _skip(report: Any, found: NeedsGpu, rootpath: str, fallback: tuple[str, int | None]) -> None:
    """Turn ``report`` into the skip pytest itself would have reported, at the test's own line."""
    path, lineno = (found.path, found.lineno) if found.path is not None else fallback
    report.outcome = "skipped"
    report.trtcap_needs_gpu = found.signature.name  # travels with the report (xdist); a test's own skip has none
    report.longrepr = (str(path), lineno, "Skipped: " + found.reason(rootpath))


def _every_other_error_needs_a_gpu(item: pytest.Item) -> bool:
    """unittest runs a test's body, ``tearDown`` and cleanups in one call; pytest reports the first error there
    and keeps the others on the item (``_excinfo``, reported at teardown). The test is converted only when every
    failure it reports needs a GPU: a skip or an xfail among them is no failure."""
    for excinfo in item.__dict__.get("_excinfo") or ():
        value = getattr(excinfo, "value", None)
        if not isinstance(value, (pytest.skip.Exception, pytest.xfail.Exception)) and _needs_gpu(excinfo) is None:
            return False
    return True


def convert_test_report(report: pytest.TestReport, call: pytest.CallInfo, item: pytest.Item) -> None:
    """A failed setup or call whose exception needs a GPU, as does every other error the test reports: reported
    as skipped (teardown failures stay)."""
    if not report.failed or report.when not in ("setup", "call"):
        return
    found = _needs_gpu(call.excinfo)
    if found is not None and _every_other_error_needs_a_gpu(item):
        path, lineno, _ = item.reportinfo()
        _skip(report, found, str(item.config.rootpath), (str(path), None if lineno is None else lineno + 1))
        # The call now holds the skip as well (as pytest's unittest support does for SkipTest), so that --pdb
        # and other exception hooks treat it as the skip it was reported as.
        longrepr = report.longrepr  # (path, line, reason), as _skip set it
        reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr).removeprefix("Skipped: ")
        call.excinfo = pytest.CallInfo.from_call(lambda: pytest.skip(reason), call.when).excinfo


def convert_collect_report(report: pytest.CollectReport, collector: pytest.Collector) -> None:
    """A module whose import needs a GPU (a device query in a decorator, say): the module is skipped."""
    if report.outcome != "failed":
        return
    # pytest keeps the collection's CallInfo on the report as ``call`` until ``collect_one_node`` pops it.
    found = _needs_gpu(getattr(report.__dict__.get("call"), "excinfo", None))
    if found is not None:
        _skip(report, found, str(collector.config.rootpath), (str(collector.path), None))
        report.result = []


def signature_of(report: Any) -> str | None:
    """The signature of a report this module converted; None for any other report, whatever its text says."""
    name = getattr(report, "trtcap_needs_gpu", None)
    return name if report.skipped and isinstance(name, str) else None


def summary_line(signatures: Iterable[str]) -> str:
    """``needs a GPU: N (cuda-init: a, trt-engine: b, ...)`` over the converted skips."""
    names = Counter(signatures)
    total = sum(names.values())
    detail = ", ".join(f"{name}: {n}" for name, n in sorted(names.items()))
    return f"needs a GPU: {total} ({detail})"


def header_text(mode: str, sourced: str) -> str:
    """What ``--trtcap-needs-gpu`` does on this host; probes it only once torch is imported."""
    if mode != "skip":
        return f"{mode} ({sourced}; a failure for want of a CUDA device stays a failure)"
    device = _host_has_device(probe="torch" in sys.modules)
    if device:
        caps = ", ".join(format_capability(c) for c in host_capabilities(probe=False) or ())
        return f"skip ({sourced}) does nothing: a CUDA device exists ({caps})"
    if device is None:
        return (f"skip ({sourced}; where no CUDA device exists, a failure that needs one is skipped; "
                "host probed at the first such failure)")
    return f"skip ({sourced}; no CUDA device: a failure that needs one is skipped)"


class NeedsGpuReports:
    """``--trtcap-needs-gpu skip``: a test's failure that needs a GPU becomes a skip. Registered only then, so a
    session without it pays nothing as each report is made."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
        """Outermost, so it sees the report unittest and xfail handling made."""
        report = yield
        if report.failed:
            convert_test_report(report, call, item)
        return report
