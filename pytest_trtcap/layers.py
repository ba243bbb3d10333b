"""The layer audit: what TensorRT is given, layer by layer, judged against the support matrix without the rules'
node checks.

The placement audit (``audit``) asks the rules table about the fx nodes placed on TensorRT, so a path the table does
not know (a converter that builds a matrix multiply inside itself, a new lowering pass) passes it. This module reads
what the converters actually made:

- a **partitioned** module: each TensorRT block's ``INetworkDefinition`` is built with Torch-TensorRT's own
  ``TRTInterpreter`` (``_construct_trt_network_def``: no engine build, works on a host without a GPU), under the
  compilation settings and converter registry that partitioned it, and each layer is judged by its type and its
  tensors' dtypes (:data:`NETWORK_CHECKS`);
- a **compiled** module (or anything with ``get_layer_info()``, such as recorded engine information): each engine's
  layers, from the engine inspector's JSON, are classified with :data:`ENGINE_LAYER_TABLE` (Myelin fuses layers and
  names the fusion after its kernels) and judged by the datatypes the engine reports. A layer the table does not
  know is reported as unknown, never taken as safe; an engine that carries only layer names cannot show a
  precision, and says so.

The kinds of finding are the rules' names (``fp32_gemm``, ``conv3d``, ...), so a finding reads as what the rules
table says the target cannot serve; a finding whose op no rule names is a hole in the table. Only the rules whose
capability the declared targets include apply (nothing is unservable off Turing).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import trtcap_guards as guards
from trtcap_guards import RULES, Rule
from trtcap_guards.tooling import target_name_of

from .escaping import one_line
from .partitions import ACC_PREFIX, GPU_PREFIX, on_tensorrt

#: Kinds that are not a rule's name.
UNKNOWN = "unknown"  # an engine layer the table does not know: never taken as servable
PRECISION_UNKNOWN = "precision_unknown"  # an engine built with LAYER_NAMES_ONLY: no datatypes to judge
NOT_BUILT = "network_not_built"  # the interpreter failed on the block: nothing to judge, never a pass
NOT_READ = "engine_not_read"  # get_layer_info() failed or returned what is no engine information
_OWN_KINDS = {
    UNKNOWN: "a layer the engine table does not know",
    PRECISION_UNKNOWN: "an engine without datatypes (built with LAYER_NAMES_ONLY): precision unknown",
    NOT_BUILT: "a block whose network Torch-TensorRT's interpreter could not build",
    NOT_READ: "an engine whose layer information could not be read",
}
_RULES_BY_NAME = {r.name: r for r in RULES}


class UnservableLayer(NamedTuple):
    """One layer TensorRT is given that the declared targets cannot serve (or whose servability cannot be read)."""

    block: str  # the ``_run_on_acc*`` child (a dotted path when nested)
    layer: str  # the layer's name in the network or the engine
    op: str  # the op named in the layer's name (``aten.linear.default``), else the node being converted, else ""
    kind: str  # a rule's name (``fp32_gemm``, ``conv3d``, ...) or unknown / precision_unknown / ...
    dtypes: tuple[str, ...]  # the layer's tensor datatypes, inputs then outputs, as TensorRT names them

    def describe(self) -> str:
        rule = _RULES_BY_NAME.get(self.kind)
        what = (f"{rule.cannot_serve} on SM {rule.capability[0]}.{rule.capability[1]}" if rule
                else _OWN_KINDS.get(self.kind, self.kind))
        op = f" ({self.op})" if self.op else ""
        dtypes = f" [{', '.join(self.dtypes)}]" if self.dtypes else ""
        hole = ""
        if rule is not None and self.op and not rule.applies_to(self.op):
            hole = "; no rule names this op"
        return one_line(f"{self.block}: {self.layer}{op} -> {self.kind}: {what}{dtypes}{hole}")


# --- one layer, as both kinds of module show it -----------------------------------------------------------------


class LayerView(NamedTuple):
    """What is read of one layer, from a network or an engine."""

    name: str
    category: str  # gemm, attention, convolution, other, unknown (engine) or the network's LayerType name
    op: str
    inputs: tuple[tuple[str, int], ...]  # (dtype, rank) of each input; rank -1 where unknown
    outputs: tuple[tuple[str, int], ...]

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(d for d, _ in (*self.inputs, *self.outputs))


FLOAT32 = ("FLOAT", "Float", "FP32")
BFLOAT16 = ("BF16", "BFloat16", "BFloat")

#: What each rule looks for in a layer: (rule name, the check). A layer of a GEMM or fused-attention kind with an FP32
#: input; a forward convolution over a 5-D input; a BF16 tensor anywhere; a matrix multiply made by cdist's
#: converter, in any dtype. ``fp32_acc_gemm`` needs no check of its own: the converter casts to FP32, and the layer is
#: an FP32 GEMM.
NETWORK_CHECKS: tuple[tuple[str, Callable[[LayerView], bool]], ...] = (
    ("cdist_matmul", lambda v: v.category == "gemm" and v.op == "aten._cdist_forward.default"),
    ("fp32_gemm", lambda v: v.category == "gemm" and any(d in FLOAT32 for d, _ in v.inputs)),
    ("fp32_attention", lambda v: v.category == "attention" and any(d in FLOAT32 for d, _ in v.inputs)),
    ("conv3d", lambda v: v.category == "convolution" and any(rank == 5 for _, rank in v.inputs[:1])),
    ("bf16", lambda v: any(d in BFLOAT16 for d in v.dtypes)),
)


def _judge(block: str, view: LayerView, rules: dict[str, Rule]) -> UnservableLayer | None:
    for kind, check in NETWORK_CHECKS:
        if kind in rules and check(view):
            return UnservableLayer(block, view.name, view.op, kind, view.dtypes)
    return None


# --- networks ---------------------------------------------------------------------------------------------------

#: ``[MATRIX_MULTIPLY]-[aten_ops.linear.default]-[fc1/linear_matrix_multiply]``: the converters' layer names.
_LAYER_NAME = re.compile(r"^\[(?P<type>[^\]]*)\]-\[(?P<ir>[A-Za-z0-9_]+?)_ops\.(?P<op>[^\]]+)\]-\[")
#: TensorRT layer types by the category the checks read.
NETWORK_CATEGORIES = {
    "MATRIX_MULTIPLY": "gemm",
    "EINSUM": "gemm",  # a contraction: TensorRT runs it as a GEMM
    "ATTENTION_INPUT": "attention",  # IAttention's input layer stands for the block (its matmuls take q, k and v)
    "CONVOLUTION": "convolution",
}


def op_of_layer_name(name: str, node_target: str = "") -> str:
    """``aten.linear.default`` from ``[MATRIX_MULTIPLY]-[aten_ops.linear.default]-[...]``; "" for another name. The
    converters name the source IR, not the op's namespace (``tensorrt.conv_asym_pad.default`` makes
    ``aten_ops.conv_asym_pad.default``): where the node being converted has the same op in another namespace, its
    target is the op."""
    match = _LAYER_NAME.match(name)
    if match is None or match.group("ir") == "unknown_ir":
        return ""
    op = match.group("op")
    if node_target.endswith(f".{op}"):
        return node_target
    return f"{match.group('ir')}.{op}"


def _tensor(tensor: Any) -> tuple[str, int]:
    if tensor is None:
        return ("", -1)
    shape = getattr(tensor, "shape", None)
    return (tensor.dtype.name, len(shape) if shape is not None else -1)


def _network_view(layer: Any, node_target: str) -> LayerView:
    inputs = tuple(_tensor(layer.get_input(i)) for i in range(layer.num_inputs))
    outputs = tuple(_tensor(layer.get_output(i)) for i in range(layer.num_outputs))
    kind = layer.type.name
    op = op_of_layer_name(layer.name, node_target) or node_target
    return LayerView(layer.name, NETWORK_CATEGORIES.get(kind, kind), op, tuple(i for i in inputs if i[0]),
                     tuple(o for o in outputs if o[0]))


def construct_network(interpreter: Any, construct: Callable[[], Any] | None = None) -> list[LayerView]:
    """Build ``interpreter``'s network (``construct`` is the unwrapped ``_construct_trt_network_def`` when the audit
    wraps it) and read each layer, with the target of the node whose conversion added it."""
    owners: list[tuple[int, str]] = []  # (layers before the node, its target)
    net = interpreter.ctx.net
    run_node = interpreter.run_node

    def attributed(node: Any) -> Any:
        owners.append((net.num_layers, target_name_of(node.target) if node.op == "call_function" else ""))
        return run_node(node)

    interpreter.run_node = attributed  # an instance attribute: fx's Interpreter.run calls self.run_node
    try:
        (construct or interpreter._construct_trt_network_def)()
    finally:
        del interpreter.run_node
    return read_network(net, owners)


def read_network(net: Any, owners: Sequence[tuple[int, str]] = ()) -> list[LayerView]:
    views = []
    index = 0
    for i in range(net.num_layers):
        while index + 1 < len(owners) and owners[index + 1][0] <= i:
            index += 1
        target = owners[index][1] if owners and owners[index][0] <= i else ""
        views.append(_network_view(net.get_layer(i), target))
    return views


def _interpreter(block: Any, settings: Any) -> Any:
    from torch_tensorrt.dynamo.conversion import TRTInterpreter
    from torch_tensorrt.dynamo.partitioning import construct_submodule_inputs

    return TRTInterpreter(block, construct_submodule_inputs(block), compilation_settings=settings)


def rebuild_network(interpreter: Any) -> list[LayerView]:
    """The network an interpreter would build, built by a fresh interpreter of the same class on the same module,
    input specs and settings (the registry's settings put back after)."""
    with _registry_settings_kept():
        fresh = type(interpreter)(interpreter.module, interpreter.input_specs,
                                  compilation_settings=interpreter.compilation_settings)
        return construct_network(fresh)


@contextlib.contextmanager
def _registry_settings_kept() -> Iterator[None]:
    """A ``TRTInterpreter`` sets the converter registry's compilation settings (and ``disallowed_targets``): put
    them back after the audit's own builds."""
    from trtcap_guards.tooling import converter_registry

    registry = converter_registry()
    settings = getattr(registry, "compilation_settings", None)
    disallowed = getattr(registry, "disallowed_targets", None)
    try:
        yield
    finally:
        if settings is not None:
            registry.set_compilation_settings(settings)
        if disallowed is not None:
            registry.disallowed_targets = disallowed


def network_of_block(block: Any, settings: Any = None) -> list[LayerView]:
    """Build one partitioned block's network with Torch-TensorRT's interpreter, under ``settings`` (default: the
    converter registry's, the ones that partitioned it). The interpreter sets the registry's settings: they are put
    back after."""
    from trtcap_guards.tooling import converter_registry

    if settings is None:
        settings = getattr(converter_registry(), "compilation_settings", None)
    if settings is None:
        from torch_tensorrt.dynamo._settings import CompilationSettings

        settings = CompilationSettings()
    with _registry_settings_kept():
        return construct_network(_interpreter(block, settings))


def judge_network(block: str, views: Sequence[LayerView], settings: Any = None) -> list[UnservableLayer]:
    rules = applicable_rules(settings)
    return [found for view in views if (found := _judge(block, view, rules)) is not None]


# --- engines ----------------------------------------------------------------------------------------------------


class EngineEntry(NamedTuple):
    """One row of :data:`ENGINE_LAYER_TABLE`."""

    pattern: str  # a Myelin name token (``Fc``) or an engine LayerType (``LayerType:Convolution``)
    category: str  # gemm, attention, convolution or other (servable whatever the dtype, BF16 aside)
    seen: str  # where it was seen


_CAPTURED = ("an FP32 two-linear MLP's engine, DETAILED and LAYER_NAMES_ONLY (H100, torch-tensorrt-rtx 2.11, "
             "TensorRT-RTX 1.4, 2026-12-06; shared notes torch-tensorrt-facts.md)")
_RUN = "captured in tests/data/engine_layers (H100, torch-tensorrt-rtx 2.11, TensorRT-RTX 1.4, 2026-12-06):"

_SUITE = ("seen in Torch-TensorRT's converter tests at a declared 7.5 under --trtcap-audit-layers (H100, "
          "torch-tensorrt-rtx 2.11, TensorRT-RTX 1.4, 2026-12-06; each engine dumped by .ci/dump_engine_layers.py, "
          "examples in tests/data/converter_suite_layers), in")
_COMPARE = "BOOL, INT32, INT64 or FLOAT"
_POINTWISE = "FLOAT, HALF, INT32 or INT64"
#: Myelin kernels of the converter suite's engines that are not a GEMM, an attention or a convolution: (what they are,
#: the datatypes seen, ((token, the converter tests' modules it was seen in), ...)). Every one was LayerType kgen.
_SUITE_KERNELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("a Myelin comparison or logic kernel", _COMPARE, (
        ("Eql", "test_eq_aten, test_ne_aten, test_embedding_bag_aten (__myl_GtrEqlLtOrAnd)"),
        ("Lt", "test_lt_aten, test_le_aten, test_prelu_aten"), ("Gtr", "test_gt_aten, test_ge_aten"),
        ("Or", "test_logical_or_aten, test_le_aten"), ("And", "test_logical_and_aten, test_bitwise_and_aten"),
        ("Not", "test_ne_aten, test_logical_not_aten, test_isnan_aten"), ("Xor", "test_logical_xor_aten"),
        ("Isin", "test_isinf_aten, test_softplus_aten"))),
    ("a Myelin pointwise math kernel", _POINTWISE, (
        ("Floo", "test_floor_aten, test_floor_div_aten, test_remainder_aten"), ("Ceil", "test_ceil_aten"),
        ("Roun", "test_round_aten"), ("Abs", "test_abs_aten, test_any"), ("Sign", "test_sign_aten, test_trunc_aten"),
        ("Neg", "test_neg_aten"), ("Min", "test_minimum_aten, test_clamp_aten"),
        ("Log", "test_log_aten, test_log2, test_log10, test_log1p"), ("Log1", "test_softplus_aten (log1p)"),
        ("Atan", "test_atan_aten, test_atan2_aten, test_atanh_aten"), ("Asin", "test_asin_aten, test_asinh_aten"),
        ("Acos", "test_acos_aten, test_acosh_aten"), ("Sin", "test_sin_aten"), ("Cos", "test_cos_aten"),
        ("Tan", "test_tan_aten"), ("Sinh", "test_sinh_aten"), ("Cosh", "test_cosh_aten"),
        ("Tanh", "test_tanh_aten, test_gelu_aten"), ("Erf", "test_erf_aten, test_gelu_aten"),
        ("Sigm", "test_sigmoid_aten"), ("Elu", "test_elu_aten"))),
    ("a Myelin reduction or normalization kernel", "FLOAT or INT32", (
        ("Minr", "test_amin_aten, test_min_aten"), ("Mean", "test_mean_aten, test_group_norm_aten"),
        ("Prod", "test_prod_aten"), ("Inor", "test_group_norm_aten (instance normalization)"))),
    ("a Myelin indexing, selection or data-movement kernel", "FLOAT, HALF, BOOL, INT32 or INT64", (
        ("Sele", "test_where_aten"), ("Gath", "test_gather_aten, test_index_select_aten, test_embedding_bag_aten"),
        ("Scat", "test_scatter_aten, test_index_put_aten"), ("Iota", "test_arange_aten, test_upsample_aten"),
        ("Spli", "test_split_aten"), ("Grid", "test_grid_aten (grid sampling)"),
        ("Resi", "test_upsample_aten (resize)"), ("Topk", "test_topk_aten, test_argmax_aten"),
        ("Bott", "test_topk_aten, test_argmin_aten (bottom k)"))),
)
#: Layers of Myelin's runtime outside its ``__myl_`` kernels, by LayerType: (LayerType, what, names, datatypes, where).
_SUITE_STEPS: tuple[tuple[str, str, str, str, str], ...] = (
    ("copy", "a Myelin copy of shape values or flags", "__mye<n>_myl<n>_<n>, copy_d<n>h___mye<n>_myl<n>_<n>",
     "INT64, INT32 or BOOL", "test_upsample_aten, test_pdist_aten, test_embedding_bag_aten"),
    ("memset", "a Myelin initialisation", "__mye<n>_hc_init_myl<n>_<n>, init_hvar^<n>i<n>_myl<n>_<n>",
     "INT64, INT32 or BOOL out", "test_pdist_aten, test_embedding_bag_aten"),
    ("jmp", "a jump of a Myelin loop", "jmp__mye<n>_myl<n>_<n>", "no tensors", "test_embedding_bag_aten"),
    ("cjmp", "a conditional jump of a Myelin loop", "cbr__mye<n>_myl<n>_<n>, clp___mye<n>_myl<n>_<n>",
     "1-element INT32, INT64 or BOOL in", "test_pdist_aten, test_embedding_bag_aten"),
    ("add", "a Myelin loop counter's increment", "__mye<n>_incr_myl<n>_<n>, adv_off^hvar^<n>i<n>_myl<n>_<n>",
     "1-element INT32 or INT64", "test_pdist_aten, test_embedding_bag_aten"),
    ("signal", "a Myelin stream synchronization", "entry^bb^signal^<n>_myl<n>_<n>", "no tensors",
     "test_composite_aten_op (scaled dot-product attention, static shapes)"),
    ("wait", "a Myelin stream synchronization", "entry^bb^wait^<n>_myl<n>_<n>", "no tensors",
     "test_composite_aten_op (scaled dot-product attention, static shapes)"),
    ("ShapeHostToDevice", "a copy of shape values to the device", "[ShapeHostToDeviceCopy <n>]", "INT64 or INT32 out",
     "test_arange_aten, test_sym_numel_aten, test_full_aten, test_sym_size, test_pdist_aten"),
    ("avgpool", "average pooling, 2D and 3D (3D pooling is a pooling layer, not a convolution)",
     "[AVERAGE]-[aten_ops.avg_pool<n>d.default]-[...]", "FLOAT", "test_pool_aten"),
)

#: How engine layers are classified. Myelin (TensorRT-RTX's fusing compiler) names a fused layer
#: ``__myl_<Kernels>_myl<g>_<n>``, the kernels CamelCase (``FcAddRelu``: a GEMM, an add and a ReLU); other layers keep
#: a ``LayerType`` (``LayerType:`` entries), and a few kernels are known by their name's start (``Name:`` entries). A
#: Myelin name is read token by token: any GEMM, attention or convolution token makes the layer that category; a token
#: not in the table, or a name cut short (:data:`TRUNCATED`), makes it unknown. Myelin's runtime steps outside its
#: kernels (copies, initialisations, the jumps of its loops, stream synchronization) are known by their LayerType. Each
#: entry says where it was seen, with what LayerType and datatypes.
ENGINE_LAYER_TABLE: tuple[EngineEntry, ...] = (
    EngineEntry("Fc", "gemm", f"a fully connected (GEMM) kernel, in __myl_FcAddRelu_myl0_0: {_CAPTURED}; {_RUN} "
                "linear, matmul (__myl_FcAdd) and cdist (__myl_FcMax)"),
    EngineEntry("Add", "other", f"the bias add fused after a GEMM: {_CAPTURED}; {_RUN} linear, matmul"),
    EngineEntry("Relu", "other", f"the ReLU fused after the first GEMM: {_CAPTURED}; {_RUN} linear"),
    EngineEntry("LayerType:shape_call", "other", f"the shape computation a dynamic-shape engine adds: {_CAPTURED}; "
                f"{_RUN} every dynamic case (__mye<n>_0_myl0_0)"),
    EngineEntry("LayerType:gemm", "gemm", f"{_RUN} attention FP32 (__fc<n>_myl0_2, its two matmuls) and dynamic "
                "cdist ([MATRIX_MULTIPLY]-[aten_ops.matmul.default]-[/matmul]_myl0_5)"),
    EngineEntry("LayerType:correlation", "convolution", f"{_RUN} conv2d and conv3d "
                "([CONVOLUTION]-[aten_ops.convolution.default]-[conv/convolution]_myl0_1)"),
    EngineEntry("Name:_gemm_mha", "attention", f"the fused attention kernel (_gemm_mha_v2_myl0_3, LayerType kgen): "
                f"{_RUN} attention FP16"),
    *(EngineEntry(token, "other", f"a Myelin pointwise, reduction or data-movement kernel: {_RUN} {where}")
      for token, where in (
          ("Move", "conv2d, conv3d, attention"), ("Tran", "conv2d, conv3d, attention"),
          ("Conc", "conv2d, conv3d, cdist"), ("Repl", "conv2d dynamic, cdist dynamic"), ("Resh", "attention, cdist"),
          ("Cast", "attention FP16, cdist"), ("Mul", "attention, cdist"), ("Maxr", "attention FP32 (softmax)"),
          ("Sub", "attention FP32 (softmax)"), ("Exp", "attention FP32 (softmax)"),
          ("Sum", "attention FP32, cdist"), ("Div", "attention FP32 (softmax)"), ("Pow", "cdist"),
          ("Slic", "cdist dynamic"), ("Max", "cdist (clamp)"), ("Sqrt", "cdist"))),
    EngineEntry("Corr", "convolution", f"a correlation (convolution) Myelin fused into a kgen kernel, FLOAT "
                f"(__myl_MoveConcMoveConcConcCorr: a 1D convolution with a tensor weight, its input 4-D): {_SUITE} "
                "test_convolution_aten"),
    *(EngineEntry(token, "other", f"{what}, LayerType kgen, {dtypes}: {_SUITE} {where}")
      for what, dtypes, entries in _SUITE_KERNELS for token, where in entries),
    *(EngineEntry(f"LayerType:{kind}", "other", f"{what} ({names}), {dtypes}: {_SUITE} {where}")
      for kind, what, names, dtypes, where in _SUITE_STEPS),
)


def _table(entries: Sequence[EngineEntry] = ENGINE_LAYER_TABLE) -> tuple[dict[str, str], dict[str, str]]:
    tokens = {e.pattern: e.category for e in entries if not e.pattern.startswith(("LayerType:", "Name:"))}
    types = {e.pattern.split(":", 1)[1].lower(): e.category for e in entries if e.pattern.startswith("LayerType:")}
    return tokens, types


_MYELIN = re.compile(r"^__myl_(?P<kernels>[A-Za-z0-9]+?)_myl\d+_\d+$")
_TOKEN = re.compile(r"[A-Z][a-z0-9]*")
_RESTRICTED = ("gemm", "attention", "convolution")
#: Myelin cuts a long fused layer's name short, ending it with ``Etc`` (``__myl_IotaMulFloo...ReplReshEtc_myl0_0``):
#: the kernels after the cut cannot be read, so the layer is unknown unless a GEMM, attention or convolution token
#: shows before it, whatever the table says of the tokens shown.
TRUNCATED = "Etc"


def classify_engine_layer(name: str, layer_type: str = "", entries: Sequence[EngineEntry] = ENGINE_LAYER_TABLE) -> str:
    """The category of an engine layer, from its name's Myelin kernels or its LayerType; ``unknown`` when the table
    does not know it."""
    tokens, types = _table(entries)
    match = _MYELIN.match(name)
    if match is None:
        for entry in entries:  # a kernel named outside Myelin's scheme, by its name's start
            if entry.pattern.startswith("Name:") and name.startswith(entry.pattern.split(":", 1)[1]):
                return entry.category
        return types.get(layer_type.lower(), UNKNOWN)
    found = [UNKNOWN if t == TRUNCATED else tokens.get(t, UNKNOWN) for t in _TOKEN.findall(match.group("kernels"))]
    restricted = [c for c in found if c in _RESTRICTED]
    if restricted:
        return restricted[0]
    return UNKNOWN if not found or UNKNOWN in found else "other"


def _engine_tensors(tensors: Any) -> tuple[tuple[str, int], ...]:
    out = []
    for tensor in tensors or ():
        if not isinstance(tensor, dict):
            continue
        fmt = str(tensor.get("Format/Datatype", ""))
        dims = tensor.get("Dimensions")
        out.append((_engine_dtype(fmt), len(dims) if isinstance(dims, list) else -1))
    return tuple(out)


_DATATYPE_WORDS = (("BFloat16", "BF16"), ("BF16", "BF16"), ("FP32", "FLOAT"), ("Float", "FLOAT"), ("Half", "HALF"),
                   ("FP16", "HALF"), ("Int64", "INT64"), ("Int32", "INT32"), ("INT64", "INT64"), ("INT32", "INT32"),
                   ("Int8", "INT8"), ("Bool", "BOOL"), ("FP8", "FP8"))


def _engine_dtype(fmt: str) -> str:
    """TensorRT's datatype name (``FLOAT``) for the inspector's ``Format/Datatype`` (``Float``, ``Row major linear
    FP32``), so both kinds of module name dtypes alike; the text itself where no word is known."""
    for word, name in _DATATYPE_WORDS:
        if re.search(rf"\b{word}\b", fmt):
            return name
    return fmt


def engine_views(info: Any) -> tuple[list[LayerView], bool]:
    """The layers of an engine inspector's JSON (text or parsed), and whether they carry datatypes (DETAILED)."""
    data = json.loads(info) if isinstance(info, (str, bytes)) else info
    layers = data.get("Layers") if isinstance(data, dict) else None
    if not isinstance(layers, list):
        raise ValueError(f"no 'Layers' list in the engine information: {str(info)[:80]!r}")
    views, detailed = [], bool(layers)
    for layer in layers:
        if isinstance(layer, dict):
            name, kind = str(layer.get("Name", "")), str(layer.get("LayerType", ""))
            views.append(LayerView(name, classify_engine_layer(name, kind), "",
                                   _engine_tensors(layer.get("Inputs")), _engine_tensors(layer.get("Outputs"))))
        else:
            detailed = False
            views.append(LayerView(str(layer), classify_engine_layer(str(layer)), "", (), ()))
    return views, detailed


def judge_engine(block: str, info: Any, settings: Any = None) -> list[UnservableLayer]:
    """Findings for one engine's inspector JSON: judged layers, unknown ones, or one ``precision_unknown`` for an
    engine that carries only names (when a rule applies at all)."""
    rules = applicable_rules(settings)
    if not rules:
        return []
    try:
        views, detailed = engine_views(info)
    except (ValueError, TypeError) as exc:
        return [UnservableLayer(block, f"(engine: {_error(exc)})", "", NOT_READ, ())]
    found = [UnservableLayer(block, v.name, "", UNKNOWN, v.dtypes) for v in views if v.category == UNKNOWN]
    if not detailed:
        return [UnservableLayer(block, "(all layers)", "", PRECISION_UNKNOWN, ()), *found]
    return found + [f for v in views if v.category != UNKNOWN and (f := _judge(block, v, rules)) is not None]


# --- modules ----------------------------------------------------------------------------------------------------


def applicable_rules(settings: Any = None) -> dict[str, Rule]:
    """The rules whose capability the declared targets include, by name."""
    decision = guards.capability_decision(settings)
    return {r.name: r for r in RULES if decision.targets_capability(r.capability)}


def tensorrt_blocks(module: Any) -> list[tuple[str, Any]]:
    """``module``'s TensorRT blocks (name, child), or ``module`` itself where it is one engine; a ``TypeError`` where
    there is none to read."""
    return list(_blocks(module))


def _blocks(module: Any) -> Iterator[tuple[str, Any]]:
    named = getattr(module, "named_modules", None)
    if not callable(named):
        if callable(getattr(module, "get_layer_info", None)):
            yield "(engine)", module
            return
        raise TypeError(f"unservable_layers: expected a partitioned or compiled torch.nn.Module, or anything with "
                        f"get_layer_info(); got a {type(module).__name__}")
    seen = False
    for name, child in named():
        last = name.rsplit(".", 1)[-1]
        seen = seen or last.startswith((ACC_PREFIX, GPU_PREFIX))
        if on_tensorrt(last) or (not name and callable(getattr(child, "get_layer_info", None))):
            seen = True
            yield name or "(engine)", child
    if not seen:
        raise TypeError(f"unservable_layers: cannot see into a {type(module).__name__}: no TensorRT blocks "
                        "(pass the module a Torch-TensorRT partitioner or compile returned)")


def _error(exc: BaseException) -> str:
    return one_line(f"{type(exc).__name__}: {exc}")[:160]


def judge_block(name: str, block: Any, settings: Any) -> list[UnservableLayer]:
    """One TensorRT block's findings, named ``name``: its network (a graph) or its engine (``get_layer_info()``); a
    network the interpreter cannot build, or an engine that cannot be read, is a finding of its own."""
    if getattr(block, "graph", None) is not None:
        try:
            views = network_of_block(block, settings)
        except Exception as exc:
            return [UnservableLayer(name, f"(network: {_error(exc)})", "", NOT_BUILT, ())]
        return judge_network(name, views, settings)
    info = getattr(block, "get_layer_info", None)
    if not callable(info):
        raise TypeError(f"unservable_layers: cannot see into {name}, a {type(block).__name__} (no graph, no "
                        "get_layer_info())")
    try:
        text = info()
    except Exception as exc:
        return [UnservableLayer(name, f"(engine: {_error(exc)})", "", NOT_READ, ())]
    return judge_engine(name, text, settings)


def unservable_layers(module: Any, settings: Any = None) -> list[UnservableLayer]:
    """Every layer TensorRT is given in ``module``'s TensorRT blocks that the declared targets cannot serve.

    A partitioned module (blocks with a graph): each block's network is built with Torch-TensorRT's interpreter under
    ``settings`` (default: the converter registry's) and judged by layer type and dtypes. A compiled module (blocks
    with ``get_layer_info()``), or one such object itself: each engine's layers, classified with
    :data:`ENGINE_LAYER_TABLE`; an unknown layer is a finding of kind ``unknown``, an engine without datatypes one of
    kind ``precision_unknown``. Empty where no rule applies to the declared targets."""
    found: list[UnservableLayer] = []
    for name, block in tensorrt_blocks(module):
        found.extend(judge_block(name, block, settings))
    return found


def describe_layers(found: Sequence[UnservableLayer]) -> str:
    return "\n".join(f"  {f.describe()}" for f in found)


def assert_servable_layers(module: Any, settings: Any = None) -> None:
    """Fail, listing each finding of :func:`unservable_layers` and the capability decision, when there is any."""
    found = unservable_layers(module, settings)
    if found:
        decision = guards.capability_decision(settings)
        raise AssertionError(
            f"{len(found)} layer(s) given to TensorRT that the declared targets cannot serve:\n"
            f"{describe_layers(found)}\n"
            f"trtcap: targets Turing on TensorRT-RTX = {decision.targets_turing}: {one_line(decision.reason)}"
        )
