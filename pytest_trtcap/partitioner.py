"""The actual half of a partition-count test: a model exported, lowered and partitioned by Torch-TensorRT's own code.

``partition(model, *example_inputs, **settings)`` does what ``torch_tensorrt.dynamo.compile`` does up to the point
where it would build engines: ``torch.export``, Torch-TensorRT's pre-export lowering, decompositions and
post-lowering passes, its compilation settings handed to the converter registry (whose validators the guards wrap),
and one of its partitioners, looked up on ``torch_tensorrt.dynamo.partitioning`` at each call (so the placement
audit, which wraps those entry points, sees every partition made here). Nothing is built or run: it works on a host
with no GPU. Loaded when a test first calls it; torch and Torch-TensorRT are imported then.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Mapping
from typing import Any

from .escaping import one_line
from .partitions import Partitioned, count_partitions

#: ``partitioner=`` -> the entry point of ``torch_tensorrt.dynamo.partitioning`` it calls.
PARTITIONERS = {"fast": "fast_partition", "global": "global_partition",
                "hierarchical": "hierarchical_adjacency_partition"}
#: Unlike ``compile`` (5), a test's small model is partitioned block by block unless it says otherwise.
MIN_BLOCK_SIZE = 1


def partition(model: Any, *example_inputs: Any, kwarg_inputs: Any = None, dynamic_shapes: Any = None,
              partitioner: str | None = None, device: Any = None, **settings: Any) -> Partitioned:
    """Export ``model`` with ``example_inputs`` and ``kwarg_inputs`` (and ``dynamic_shapes``, as
    ``torch.export.export`` takes them),
    lower it and partition it as ``torch_tensorrt.dynamo.compile`` would, under the declared targets and the
    installed guards; no engine is built.

    ``settings`` are ``CompilationSettings`` fields (``min_block_size``, default 1; ``torch_executed_ops``;
    ``use_fp32_acc``; ``enable_resource_partitioning`` splits the TensorRT blocks further, as ``compile`` does;
    ...). ``partitioner`` is ``"fast"`` (``compile``'s default), ``"global"`` or
    ``"hierarchical"``; left out, ``use_fast_partitioner=False`` chooses ``"global"``. ``device``: where the model
    (moved in place, as ``Module.to`` does, and put in eval mode) and copies of the inputs go before export; the
    CUDA device where one exists, else the CPU. An ``ExportedProgram`` is taken as it is (no inputs needed).
    """
    import torch

    chosen = _partitioner(partitioner, settings)
    compilation = _compilation_settings(settings)
    if isinstance(model, torch.export.ExportedProgram):
        exported = model
    else:
        where = torch.device(device) if device is not None else _default_device(torch)
        def placed(x: Any) -> Any:
            return x.to(where) if isinstance(x, torch.Tensor) else x

        inputs = tuple(placed(x) for x in example_inputs)
        kwargs = {k: placed(v) for k, v in (kwarg_inputs or {}).items()}
        exported = torch.export.export(model.to(where).eval(), inputs, kwargs, dynamic_shapes=dynamic_shapes)
    lowered = _lower(exported, compilation)
    module = _split(lowered, compilation, chosen)
    return Partitioned(module, count_partitions(module))


def _default_device(torch: Any) -> Any:
    """A GPU host exports on its device: on the CPU, attention lowers to a CPU-only op that no converter serves."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _partitioner(name: str | None, settings: Mapping[str, Any]) -> str:
    if name is None:
        return "fast" if settings.get("use_fast_partitioner", True) else "global"
    if name not in PARTITIONERS:
        raise ValueError(f"partition: partitioner={one_line(repr(name))} is not one of {', '.join(PARTITIONERS)}")
    fast = settings.get("use_fast_partitioner")
    if fast is not None and bool(fast) != (name == "fast"):
        raise ValueError(f"partition: partitioner={name!r} contradicts use_fast_partitioner={fast!r}; give one")
    return name


def _compilation_settings(given: Mapping[str, Any]) -> Any:
    """``CompilationSettings`` from the test's keywords; a name it has no field for is refused with the nearest."""
    import dataclasses

    from torch_tensorrt.dynamo._settings import CompilationSettings

    fields = {f.name for f in dataclasses.fields(CompilationSettings)}
    unknown = sorted(set(given) - fields)
    if unknown:
        near = difflib.get_close_matches(unknown[0], sorted(fields), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise TypeError(f"partition: {unknown[0]}={one_line(repr(given[unknown[0]]))} is not a CompilationSettings "
                        f"field of the installed Torch-TensorRT{hint}")
    values = {"min_block_size": MIN_BLOCK_SIZE, **given}
    if "torch_executed_ops" in values:
        values["torch_executed_ops"] = set(values["torch_executed_ops"] or ())
    return CompilationSettings(**values)


def _lower(exported: Any, settings: Any) -> Any:
    """Torch-TensorRT's lowering, as ``compile`` runs it; a keyword an older release's decompositions lack is not
    passed (``use_fp32_acc`` is newer than 2.11)."""
    from torch_tensorrt.dynamo import lowering
    from torch_tensorrt.dynamo.conversion._ConverterRegistry import DYNAMO_CONVERTERS

    pre_export = getattr(lowering, "pre_export_lowering", None)
    if pre_export is not None:
        exported = pre_export(exported, settings)
    wanted = {"enable_experimental_decompositions": settings.enable_experimental_decompositions,
              **{k: getattr(settings, k) for k in ("decompose_attention", "use_distributed_mode_trace", "use_fp32_acc")
                 if hasattr(settings, k)}}
    accepted = inspect.signature(lowering.get_decompositions).parameters
    exported = exported.run_decompositions(lowering.get_decompositions(
        **{k: v for k, v in wanted.items() if k in accepted}))
    DYNAMO_CONVERTERS.set_compilation_settings(settings)  # the validators, and the guards', read these
    return lowering.post_lowering(exported.module(), settings)


def _split(lowered: Any, settings: Any, chosen: str) -> Any:
    """One of Torch-TensorRT's partitioners, read from its module now: the audit wraps these attributes."""
    from torch_tensorrt.dynamo import partitioning

    options = {"min_block_size": settings.min_block_size, "torch_executed_ops": settings.torch_executed_ops,
               "require_full_compilation": settings.require_full_compilation}
    entry = getattr(partitioning, PARTITIONERS[chosen], None)
    if entry is None:  # an older release
        raise ValueError(f"partition: partitioner={chosen!r}: the installed Torch-TensorRT has no "
                         f"torch_tensorrt.dynamo.partitioning.{PARTITIONERS[chosen]}")
    module, _ = entry(lowered, **options)
    if getattr(settings, "enable_resource_partitioning", False):  # as compile does after partitioning
        from torch_tensorrt.dynamo.partitioning._resource_partitioner import resource_partition

        module = resource_partition(module, cpu_memory_budget=settings.cpu_memory_budget)
    return module
