"""``--trtcap-audit-layers``: every TensorRT network built during the run, and every engine where a device builds one,
judged layer by layer (``layers``), and the findings attributed to the running test.

Once the suite has imported torch_tensorrt, two methods of Torch-TensorRT's ``TRTInterpreter`` are wrapped (the class
every conversion goes through: ``dynamo.compile`` and the converter tests that drive the interpreter themselves):

- ``_construct_trt_network_def``: the network is built as before, each layer attributed to the node whose conversion
  added it, then read and judged under the interpreter's own compilation settings;
- ``run``: the interpreter's builder config is given ``DETAILED`` profiling verbosity (for this interpreter only, so
  no other wrapper of the config is disturbed), and the engine it returns, where there is one (a host with a CUDA
  device), is read through TensorRT's engine inspector and judged.

The audit never changes what the interpreter returns, and a failure of its own is reported as a finding, never
raised into the conversion. Both methods are put back when the session ends.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

from . import layers

INTERPRETER_MODULE = "torch_tensorrt.dynamo.conversion._TRTInterpreter"
WRAPPED = ("__init__", "_construct_trt_network_def", "run")
#: How a network the test never built is labelled: the audit built it from the interpreter the test made.
UNBUILT = "(the test built none: built by the audit)"


def engine_information(engine: Any) -> str:
    """The engine inspector's JSON of a built engine (``ICudaEngine``)."""
    import tensorrt as trt

    return str(engine.create_engine_inspector().get_engine_information(trt.LayerInformationFormat.JSON))


def _engine_of(result: Any) -> Any:
    """The built engine an interpreter's result holds (an ``ICudaEngine``; a serialized one is deserialized), or
    None."""
    engine = getattr(result, "engine", None)
    if engine is None:
        engine = getattr(result, "serialized_engine", None)
    if engine is None or hasattr(engine, "create_engine_inspector"):
        return engine
    try:
        import tensorrt as trt

        return trt.Runtime(trt.Logger(trt.Logger.ERROR)).deserialize_cuda_engine(bytes(engine))
    except Exception:  # no device to deserialize on: nothing to read
        return None


class LayerAudit:
    """The wrapped interpreter methods and what they found, per test (``key()`` names the running test)."""

    def __init__(self, key: Callable[[], str]) -> None:
        self.key = key
        self.pending: dict[str, list[str]] = {}  # findings of this process, not yet attached to a report
        self.read: dict[str, list[int]] = {}  # [networks, engines] read per test in this process
        self.unbuilt: dict[str, dict[int, Any]] = {}  # interpreters made in a test that has not built their network
        self._restore: list[tuple[Any, str, Any]] = []
        self._own = False  # while the audit builds a network itself: the wrappers stand aside
        self.from_partitions: dict[str, list[Any]] = {}  # per test, the blocks whose network a partition audit read
        self.partitions: dict[str, int] = {}  # per test, partitions whose blocks were read

    def activate(self) -> None:
        if self._restore:
            return
        cls = importlib.import_module(INTERPRETER_MODULE).TRTInterpreter
        for name, wrap in zip(WRAPPED, (self._wrap_init, self._wrap_network, self._wrap_run)):
            original = cls.__dict__.get(name)
            if callable(original):
                wrapped = wrap(original)
                wrapped.__trtcap_audited__ = original  # type: ignore[attr-defined]
                setattr(cls, name, wrapped)
                self._restore.append((cls, name, original))

    def deactivate(self) -> None:
        while self._restore:
            cls, name, original = self._restore.pop()
            if getattr(cls.__dict__.get(name), "__trtcap_audited__", None) is original:
                setattr(cls, name, original)

    # --- the wrappers -----------------------------------------------------------------------------------------

    def _wrap_init(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Remember each interpreter a test makes: one whose network the test never builds (on a host without a GPU,
        Torch-TensorRT's converter tests fail moving their inputs to CUDA before they run the interpreter) is built
        by the audit when the test ends."""
        audit = self

        @functools.wraps(original)
        def init(interpreter: Any, *args: Any, **kwargs: Any) -> None:
            original(interpreter, *args, **kwargs)
            if not audit._own:
                audit.unbuilt.setdefault(audit.key(), {})[id(interpreter)] = interpreter

        return init

    def _wrap_network(self, original: Callable[..., Any]) -> Callable[..., Any]:
        audit = self

        @functools.wraps(original)
        def construct(interpreter: Any, *args: Any, **kwargs: Any) -> Any:
            if audit._own:
                return original(interpreter, *args, **kwargs)
            for made in audit.unbuilt.values():
                made.pop(id(interpreter), None)
            module = getattr(interpreter, "module", None)
            if any(block is module for block in audit.from_partitions.get(audit.key(), ())):
                return original(interpreter, *args, **kwargs)  # read already, from its partition (compile's path)
            result: list[Any] = []
            views = layers.construct_network(interpreter, lambda: result.append(original(interpreter, *args,
                                                                                           **kwargs)))
            audit._judged(0, lambda block: layers.judge_network(
                block, views, getattr(interpreter, "compilation_settings", None)))
            return result[0] if result else None

        return construct

    def _wrap_run(self, original: Callable[..., Any]) -> Callable[..., Any]:
        audit = self

        @functools.wraps(original)
        def run(interpreter: Any, *args: Any, **kwargs: Any) -> Any:
            populate = type(interpreter)._populate_trt_builder_config

            def detailed(*a: Any, **k: Any) -> Any:
                config = populate(interpreter, *a, **k)
                import tensorrt as trt

                config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
                return config

            interpreter._populate_trt_builder_config = detailed  # this interpreter only
            try:
                result = original(interpreter, *args, **kwargs)
            finally:
                interpreter.__dict__.pop("_populate_trt_builder_config", None)
            engine = _engine_of(result)
            if engine is not None:
                audit._judged(1, lambda block: layers.judge_engine(
                    block, engine_information(engine), getattr(interpreter, "compilation_settings", None)))
            return result

        return run

    def _judged(self, which: int, judge: Callable[[str], list[layers.UnservableLayer]], key: str | None = None,
                note: str = "", label: str = "") -> None:
        key = self.key() if key is None else key
        read = self.read.setdefault(key, [0, 0])
        read[which] += 1
        block = label or f"{('network', 'engine')[which]} {read[which]}{note}"
        try:
            found = [f.describe() for f in judge(block)]
        except Exception as exc:  # the audit's own failure is a finding, never the conversion's
            found = [f"{block}: layer audit failed: {type(exc).__name__}: {exc}"]
        if found:
            self.pending.setdefault(key, []).extend(found)

    # --- the report ------------------------------------------------------------------------------------------

    def partition(self, module: Any, settings: Any) -> None:
        """Build and judge the network of each TensorRT block of a partition the run made (the partition level:
        what the suite partitions is audited whether or not it is ever converted)."""
        key = self.key()
        self.partitions[key] = number = self.partitions.get(key, 0) + 1
        try:
            blocks = [(name, block) for name, block in layers.tensorrt_blocks(module)
                      if getattr(block, "graph", None) is not None]
        except TypeError:
            return
        for name, block in blocks:
            self.from_partitions.setdefault(key, []).append(block)  # kept alive: compared by identity
            self._own = True
            try:
                self._judged(0, functools.partial(_judge_block, block, settings), key,
                             label=f"partition {number}: {name}")
            finally:
                self._own = False

    def build_unbuilt(self, key: str) -> None:
        """Build and judge the network of each interpreter made during the test that never built one."""
        made = self.unbuilt.pop(key, {})
        for interpreter in made.values():
            self._own = True
            try:
                self._judged(0, functools.partial(_judge_rebuilt, interpreter), key, f" {UNBUILT}")
            finally:
                self._own = False

    def take(self, key: str) -> tuple[list[str], list[int]]:
        self.build_unbuilt(key)
        self.from_partitions.pop(key, None)
        self.partitions.pop(key, None)
        return self.pending.pop(key, []), self.read.pop(key, [0, 0])


def _judge_block(block: Any, settings: Any, label: str) -> list[layers.UnservableLayer]:
    return layers.judge_block(label, block, settings)


def _judge_rebuilt(interpreter: Any, block: str) -> list[layers.UnservableLayer]:
    views = layers.rebuild_network(interpreter)
    return layers.judge_network(block, views, getattr(interpreter, "compilation_settings", None))


def summary_lines(found: dict[str, list[str]], networks: int, engines: int) -> list[str]:
    read = f"layer audit: {networks} network(s), {engines} engine(s) read"
    if not found:
        return [f"{read}; nothing the declared targets cannot serve"]
    total = sum(len(lines) for lines in found.values())
    out = [f"{read}; {total} finding(s) in {len(found)} test(s)"]
    for nodeid, lines in found.items():
        out.append(f"  {nodeid}")
        out.extend(f"    {line}" for line in lines)
    return out
