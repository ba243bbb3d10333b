"""The generated validators and the rules' node checks, on real exported nodes and on odd ones, and through the real
Torch-TensorRT partitioners that consult them (what lands in TensorRT, what falls back to PyTorch)."""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import pytest
import torch
import trt_models as tm
from hypothesis import given
from hypothesis import strategies as st

import trtcap_guards as guards

pytestmark = pytest.mark.usefixtures("tt")

RULE = {r.name: r for r in guards.RULES}
V = guards.VALIDATORS
GEMM_TARGET = tm.GEMM_LOWERED_TARGET


def the_node(gm, target):
    (node,) = tm.nodes_with_target(gm, target)
    return node


# --- the table ------------------------------------------------------------------------------------


def test_every_rule_has_its_validator_and_marker():
    assert set(V) == {r.validator for r in guards.RULES}
    for rule in guards.RULES:
        assert rule in V[rule.validator].rules
        assert rule in guards.markers()[rule.marker]
        assert rule.capability == guards.TURING
    assert guards.rules_for("aten.mm.default") == (RULE["fp32_gemm"], RULE["fp32_acc_gemm"], RULE["bf16"])
    assert guards.rules_for("aten.relu.default") == (RULE["bf16"],)


# --- GEMMs on real exported nodes ---------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(GEMM_TARGET))
def test_gemm_validator_on_real_nodes(op, targets):
    fp32 = the_node(tm.gemm_graph(op, torch.float32), GEMM_TARGET[op])
    fp16 = the_node(tm.gemm_graph(op, torch.float16), GEMM_TARGET[op])
    targets("7.5")
    assert V["gemm_capability_validator"](fp32) is False
    assert guards.rejecting_rule(fp32) is RULE["fp32_gemm"]
    assert RULE["fp32_gemm"].rejects(fp32)
    assert V["gemm_capability_validator"](fp16) is True
    assert guards.rejecting_rule(fp16) is None
    assert V["bf16_capability_validator"](fp32) is True
    targets("8.9")
    assert V["gemm_capability_validator"](fp32) is True
    assert guards.rejecting_rule(fp32) is None
    assert RULE["fp32_gemm"].rejects(fp32)  # the node check itself does not read the targets


def test_gemm_validator_on_real_linear_nodes(targets):
    fp32 = tm.nodes_with_target(tm.lowered_mlp(torch.float32), "aten.linear.default")
    fp16 = tm.nodes_with_target(tm.lowered_mlp(torch.float16), "aten.linear.default")
    assert len(fp32) == len(fp16) == 2
    targets("7.5")
    assert [V["gemm_capability_validator"](n) for n in fp32] == [False, False]
    assert [V["gemm_capability_validator"](n) for n in fp16] == [True, True]


def test_matmul_packet_name_is_guarded_too(targets):
    node = the_node(tm.gemm_graph("matmul", torch.float32), "aten.matmul.default")
    targets("7.5")
    assert RULE["fp32_gemm"].rejects(node, "aten.matmul")
    assert guards.rejecting_rule(node, target_name="aten.matmul") is RULE["fp32_gemm"]


def test_gemm_operand_dtype_comes_from_val_then_tensor_meta(targets):
    """README: dtypes are read from ``meta["val"]``, else ``meta["tensor_meta"]``; with neither, not FP32."""
    mm = the_node(tm.gemm_graph("mm", torch.float32), GEMM_TARGET["mm"])
    targets("7.5")
    operands = mm.args[:2]
    assert all("tensor_meta" in a.meta for a in operands)
    for a in operands:
        a.meta.pop("val")
    assert V["gemm_capability_validator"](mm) is False
    for a in operands:
        a.meta.pop("tensor_meta")
    assert V["gemm_capability_validator"](mm) is True


def test_casting_to_fp16_before_the_gemm_is_accepted_at_turing(targets):
    """The Turing-safe pattern (``turing_safe_gemm_dtype``): FP32 inputs cast to FP16 right before the GEMM."""
    model = tm.Fn(lambda a, b: torch.mm(a.to(guards.turing_safe_gemm_dtype()), b.to(guards.turing_safe_gemm_dtype())))
    targets("7.5")
    gm = tm.lower(model, tm.inputs_for([(4, 8), (8, 3)]))
    mm = the_node(gm, "aten.mm.default")
    assert mm.args[0].meta["val"].dtype == torch.float16
    assert V["gemm_capability_validator"](mm) is True
    assert all(guards.rejecting_rule(n) is None for n in tm.call_function_nodes(gm))


# --- attention, cdist, convolution, BF16 ------------------------------------------------------------


def attention_node(kernel, dtype):
    """The attention node of ``kernel``: a fused one as lowered; ``sdpa`` as ``torch.export`` writes it, which
    every release converts once its decompositions leave the node alone (2.11's do not: see below)."""
    if kernel == "sdpa":
        args = tm.inputs_for([(1, 2, 4, 8)] * 3, dtype)
        return the_node(torch.export.export(tm.Attention(), args).graph_module, tm.SDPA)
    return the_node(tm.fused_attention_graph(kernel, dtype), tm.FUSED_ATTENTION[kernel])


@pytest.mark.parametrize("kernel", ["sdpa", *sorted(tm.FUSED_ATTENTION)])
def test_attention_validator_on_real_nodes(kernel, targets):
    fp32, fp16 = attention_node(kernel, torch.float32), attention_node(kernel, torch.float16)
    targets("7.5")
    assert V["attention_capability_validator"](fp32) is False
    assert guards.rejecting_rule(fp32) is RULE["fp32_attention"]
    assert V["attention_capability_validator"](fp16) is True
    targets("8.9")
    assert V["attention_capability_validator"](fp32) is True


@pytest.mark.parametrize(
    "mode, rows, rejected",
    [(1, 5, True), (None, 26, True), (0, 26, True), (None, 25, False), (0, 25, False), (2, 30, False), (2, 5, False)],
)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_cdist_validator_follows_the_converter_branch(mode, rows, rejected, dtype, targets):
    node = the_node(tm.cdist_forward_graph(mode, rows, dtype), "aten._cdist_forward.default")
    targets("7.5")
    assert V["cdist_forward_capability_validator"](node) is (not rejected)
    assert (guards.rejecting_rule(node) is RULE["cdist_matmul"]) is rejected
    targets("8.9")
    assert V["cdist_forward_capability_validator"](node) is True


def test_cdist_validator_with_second_operand_over_25_rows(targets):
    gm = tm.lowered(("cdist-x2-rows",), lambda: (tm.CdistForward(None), tm.inputs_for([(5, 4), (40, 4)])))
    targets("7.5")
    assert V["cdist_forward_capability_validator"](the_node(gm, "aten._cdist_forward.default")) is False


def test_cdist_validator_other_p_is_never_the_matmul_branch(targets):
    model = tm.Fn(lambda a, b: torch.ops.aten._cdist_forward(a, b, 1.0, 1))
    gm = tm.lowered(("cdist-p1",), lambda: (model, tm.inputs_for([(30, 4), (30, 4)])))
    targets("7.5")
    assert V["cdist_forward_capability_validator"](the_node(gm, "aten._cdist_forward.default")) is True


def test_cdist_validator_symbolic_rows_count_as_may_exceed_25(targets):
    rows = torch.export.Dim("rows", min=2, max=20)
    gm = tm.lower(tm.CdistForward(None), tm.inputs_for([(5, 4), (6, 4)]), dynamic_shapes=({0: rows}, None))
    node = the_node(gm, "aten._cdist_forward.default")
    assert not isinstance(node.args[0].meta["val"].shape[0], int)
    targets("7.5")
    assert V["cdist_forward_capability_validator"](node) is False


def test_convolution_validator(targets):
    conv3d = the_node(tm.conv_graph(3), "aten.convolution.default")
    conv2d = the_node(tm.conv_graph(2), "aten.convolution.default")
    transposed = the_node(
        tm.lowered(
            ("convT3d",), lambda: (tm.seeded(torch.nn.ConvTranspose3d, 2, 2, 3), tm.inputs_for([(1, 2, 4, 4, 4)]))
        ),
        "aten.convolution.default",
    )
    assert transposed.args[6] is True
    targets("7.5")
    assert V["convolution_capability_validator"](conv3d) is False
    assert V["convolution_capability_validator"](conv2d) is True
    assert V["convolution_capability_validator"](transposed) is True  # only forward 3D convolution is excluded
    targets("8.9")
    assert V["convolution_capability_validator"](conv3d) is True


def test_bf16_validator_on_every_node_of_a_bf16_model(targets):
    gm = tm.lowered_mlp(torch.bfloat16)
    nodes = tm.call_function_nodes(gm)
    assert [str(n.target) for n in nodes] == ["aten.linear.default", "aten.relu.default", "aten.linear.default"]
    targets("7.5")
    assert all(V["bf16_capability_validator"](n) is False for n in nodes)
    assert all(guards.rejecting_rule(n) is RULE["bf16"] for n in nodes)
    assert V["gemm_capability_validator"](nodes[0]) is True  # not FP32: the GEMM rule has nothing to say
    targets("8.9")
    assert all(V["bf16_capability_validator"](n) is True for n in nodes)


# --- settings handed to validators --------------------------------------------------------------------


def test_validators_read_targets_from_settings_before_the_declaration(targets):
    fp32 = the_node(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    targets("7.5")
    assert V["gemm_capability_validator"](fp32, SimpleNamespace(target_compute_capabilities=[(8, 9)])) is True
    targets("8.9")
    assert V["gemm_capability_validator"](fp32, SimpleNamespace(target_compute_capabilities=["7.5"])) is False


def test_validators_with_real_compilation_settings(targets):
    from torch_tensorrt.dynamo._settings import CompilationSettings

    fp32 = the_node(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    targets("7.5")
    assert V["gemm_capability_validator"](fp32, CompilationSettings(min_block_size=1)) is False


def test_validators_answer_under_a_malformed_environment(monkeypatch):
    """A bad TRTCAP_TARGET_SM is the reader's error to report; a validator must still answer (and not raise)."""
    fp32 = the_node(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    monkeypatch.setenv("TRTCAP_TARGET_SM", "banana")
    with guards.declare_targets(None):
        for validator in V.values():
            assert validator(fp32) is True
        monkeypatch.setenv("TRTCAP_BACKEND", "nonsense")
        assert all(validator(fp32) is True for validator in V.values())



class _RaisingSettings:
    """Settings whose ``target_compute_capabilities`` cannot be read: a property that raises."""

    @property
    def target_compute_capabilities(self):
        raise RuntimeError("settings exploded")


class _Untestable:
    def __bool__(self):
        raise RuntimeError("no truth value")

    def __iter__(self):
        raise RuntimeError("no iteration")


def _exploding_targets():
    yield (7, 5)
    raise RuntimeError("iteration exploded")


@pytest.mark.parametrize(
    "settings",
    [
        _RaisingSettings(),
        SimpleNamespace(target_compute_capabilities=_Untestable()),
        SimpleNamespace(target_compute_capabilities=_exploding_targets()),
    ],
    ids=["property-raises", "truth-test-raises", "iteration-raises"],
)
def test_validators_never_raise_on_settings_they_cannot_read(settings, targets):
    """Unreadable settings carry no targets: the declared ones decide (7.5 here: the FP32 mm stays off TensorRT)."""
    fp32 = the_node(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    targets("7.5")
    assert V["gemm_capability_validator"](fp32, settings) is False
    assert all(v(fp32, settings) in (True, False) for v in V.values())


def test_validators_never_raise_when_upstreams_predicate_raises(targets, monkeypatch):
    """A newer Torch-TensorRT's own predicate is consulted for settings with targets; if it raises on them, the
    guards' own answer stands."""
    import torch_tensorrt._utils as utils

    def broken(settings):
        raise AttributeError("upstream cannot read these settings")

    monkeypatch.setattr(utils, "trt_rtx_targets_turing", broken, raising=False)
    fp32 = the_node(tm.gemm_graph("mm", torch.float32), "aten.mm.default")
    targets("8.9")
    assert V["gemm_capability_validator"](fp32, SimpleNamespace(target_compute_capabilities=[(7, 5)])) is False
    assert V["gemm_capability_validator"](fp32, SimpleNamespace(target_compute_capabilities=[(8, 9)])) is True

# --- property-based: validators and rule checks are total ---------------------------------------------


@pytest.fixture(scope="module")
def node_pool(tt):
    """Real fx nodes: static, symbolic-shaped (torch.export Dims), and meta-stripped copies."""
    x, y, v = tm.inputs_for([(30, 8), (8, 3), (8,)])
    static = tm.lower(tm.seeded(tm.Mixed), (x, y, v))
    n = torch.export.Dim("n", min=2, max=64)
    dynamic = tm.lower(tm.seeded(tm.Mixed), (x, y, v), dynamic_shapes=({0: n}, None, None))
    stripped = copy.deepcopy(static)
    for node in stripped.graph.nodes:
        node.meta.clear()
    nodes = {
        "static": list(static.graph.nodes),
        "dynamic": list(dynamic.graph.nodes),
        "stripped": list(stripped.graph.nodes),
        "bf16": list(tm.lowered_mlp(torch.bfloat16).graph.nodes),
    }
    symbolic = [
        d
        for node in nodes["dynamic"]
        for d in getattr(getattr(node, "meta", {}).get("val"), "shape", ())
        if not isinstance(d, int)
    ]
    assert symbolic, "the dynamic export has symbolic sizes"
    fake_vals = [node.meta["val"] for node in nodes["dynamic"] if isinstance(node.meta.get("val"), torch.Tensor)]
    return NodePool(nodes=nodes, symbolic=symbolic, fake_vals=fake_vals, graphs=(static, dynamic, stripped))


class NodePool(SimpleNamespace):
    def __repr__(self):
        return f"NodePool({', '.join(f'{k}: {len(v)} nodes' for k, v in self.nodes.items())})"


def test_node_pool_covers_every_rule(node_pool, targets):
    """The property tests see nodes each rule rejects, in static and symbolic form."""
    targets("7.5")
    for kind in ("static", "dynamic"):
        rejected = {guards.rejecting_rule(n).name for n in node_pool.nodes[kind] if guards.rejecting_rule(n)}
        assert rejected >= {"fp32_gemm", "fp32_attention", "cdist_matmul", "conv3d"}, kind
    assert {guards.rejecting_rule(n).name for n in node_pool.nodes["bf16"] if guards.rejecting_rule(n)} == {"bf16"}
    # without meta nothing is known about dtypes or shapes: the checks still answer instead of raising
    assert all(guards.rejecting_rule(n) in (None, *guards.RULES) for n in node_pool.nodes["stripped"])


class Boom(Exception):
    """What the nasty objects raise (never AttributeError, which getattr/hasattr would swallow)."""


class Raising:
    """Every access and operator raises: the nastiest object a graph can hold."""

    def __getattr__(self, name):
        if name.startswith("_"):  # let printers (hypothesis, pytest) probe their hooks
            raise AttributeError(name)
        raise Boom(f"no {name}")

    def __repr__(self):
        return "Raising()"

    def __eq__(self, other):
        raise Boom("no ==")

    def __hash__(self):
        return 0

    def __bool__(self):
        raise Boom("no bool")

    def __len__(self):
        raise Boom("no len")

    def __iter__(self):
        raise Boom("no iter")

    def __str__(self):
        raise Boom("no str")


class WeirdShape:
    dtype = torch.float32

    @property
    def shape(self):
        return 5  # not iterable


class LyingMeta(dict):
    def get(self, *a, **k):
        raise Boom("lying")


RULE_TARGETS = list(guards.explicit_targets())
OVERLOADS = [
    torch.ops.aten.mm.default, torch.ops.aten.bmm.default, torch.ops.aten.addmm.default, torch.ops.aten.mv.default,
    torch.ops.aten.dot.default, torch.ops.aten.linear.default, torch.ops.aten.matmul.default, torch.ops.aten.matmul,
    torch.ops.aten._cdist_forward.default, torch.ops.aten.convolution.default, torch.ops.aten.relu.default,
    torch.ops.aten.scaled_dot_product_attention.default,
]
OPERAND_NAMES = sorted({name for r in guards.RULES for ops in r.targets.values() for _, name in ops}
                       | {"p", "compute_mode", "transposed"})


def values(pool, nasty=True):
    """Odd argument values: scalars, dtypes, sizes, real/fake tensors, symbolic ints, nodes (and, if ``nasty``,
    objects whose attribute access, iteration or comparison raises)."""
    nastiness = [
        st.builds(Raising),
        st.builds(SimpleNamespace, meta=st.just({"val": Raising()})),
        st.builds(SimpleNamespace, meta=st.just(LyingMeta(val=1))),
        st.builds(SimpleNamespace, dtype=st.just(torch.float32), shape=st.just(Raising())),
    ]
    leaves = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=6),
        st.sampled_from(
            [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.Size([2, 3]), torch.Size([])]
        ),
        st.sampled_from([torch.zeros(2, 3), torch.zeros(1, 1, 2, 2, 2), torch.zeros((), dtype=torch.bfloat16),
                         torch.zeros(4, dtype=torch.float16)]),
        st.sampled_from(pool.fake_vals),
        st.sampled_from(pool.symbolic),
        st.sampled_from(pool.nodes["static"] + pool.nodes["dynamic"] + pool.nodes["stripped"]),
        st.builds(WeirdShape),
        st.builds(SimpleNamespace, meta=st.just("not a dict")),
        st.builds(SimpleNamespace, meta=st.just({"val": None, "tensor_meta": None})),
        st.builds(SimpleNamespace, dtype=st.just("float32"), shape=st.just("NCHW")),
        st.just(math.nan),
        st.just(float("inf")),
        *(nastiness if nasty else ()),
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.lists(inner, max_size=4).map(tuple),
            st.dictionaries(st.sampled_from(OPERAND_NAMES + ["val", "x"]), inner, max_size=4),
        ),
        max_leaves=8,
    )


@st.composite
def odd_nodes(draw, pool, nasty=True):
    kind = draw(st.sampled_from(["real", "fresh", "fake", "raw"]))
    if kind == "real":  # real fx nodes, with and without meta, static and symbolic
        return draw(st.sampled_from([n for nodes in pool.nodes.values() for n in nodes]))
    if kind == "fresh":  # real fx nodes built with odd args/kwargs (kwargs instead of args, None, non-tensors)
        graph = torch.fx.Graph()
        target = draw(st.sampled_from(OVERLOADS))
        args = tuple(draw(st.lists(values(pool, nasty), max_size=9)))
        kwargs = draw(st.dictionaries(st.sampled_from(OPERAND_NAMES), values(pool, nasty), max_size=5))
        node = graph.create_node("call_function", target, args=args, kwargs=kwargs)
        if draw(st.booleans()):
            node.meta["val"] = draw(values(pool, nasty))
        return node
    if kind == "fake":  # duck-typed node lookalikes with weird attributes
        fields = {}
        for name, strategy in (
            ("target", st.one_of(st.sampled_from(RULE_TARGETS + OVERLOADS), values(pool, nasty), st.builds(Raising))),
            ("args", values(pool, nasty)),
            ("kwargs", values(pool, nasty)),
            ("meta", st.one_of(values(pool, nasty), st.dictionaries(st.just("val"), values(pool, nasty), max_size=1))),
            ("name", st.text(max_size=3)),
        ):
            if draw(st.booleans()):
                fields[name] = draw(strategy)
        return SimpleNamespace(**fields)
    return draw(values(pool, nasty))


SETTINGS = st.one_of(
    st.none(),
    st.builds(SimpleNamespace),
    st.sampled_from([[(7, 5)], [(8, 9)], ["7.5"], "8.9,7.5", "banana", [(7,)], 75, [None], {}, ()]).map(
        lambda caps: SimpleNamespace(target_compute_capabilities=caps)
    ),
)


def _check_total(node, settings):
    for name, validator in V.items():
        answer = validator(node, settings)
        assert answer is True or answer is False, (name, answer)
        assert validator(node) in (True, False)
    rule = guards.rejecting_rule(node, settings)
    assert rule is None or rule in guards.RULES


ODD = pytest.mark.filterwarnings("ignore:Raw SymInt value:UserWarning")  # odd on purpose


@ODD
@given(data=st.data())
def test_validators_never_raise_on_odd_nodes(node_pool, data):
    node = data.draw(odd_nodes(node_pool), label="node")
    settings = data.draw(SETTINGS, label="settings")
    with guards.declare_targets("7.5"):
        _check_total(node, settings)


@ODD
@given(data=st.data())
def test_rule_checks_never_raise_on_odd_nodes(node_pool, data):
    node = data.draw(odd_nodes(node_pool, nasty=False), label="node")
    name = data.draw(st.one_of(st.none(), st.sampled_from(RULE_TARGETS)), label="target_name")
    with guards.declare_targets("7.5"):
        for rule in guards.RULES:
            assert rule.rejects(node, name) in (True, False)
            assert rule.rejects(node) in (True, False)


NASTY_NODES = {
    "every attribute raises": lambda: Raising(),
    "operand raises": lambda: SimpleNamespace(target=torch.ops.aten.mm.default, args=(Raising(), Raising()), kwargs={}),
    "operand meta val raises": lambda: SimpleNamespace(
        target=torch.ops.aten.mm.default, args=(SimpleNamespace(meta={"val": Raising()}),), kwargs={}
    ),
    "operand meta lies": lambda: SimpleNamespace(
        target=torch.ops.aten.linear.default, args=(SimpleNamespace(meta=LyingMeta(val=1)),), kwargs={}
    ),
    "operand shape raises": lambda: SimpleNamespace(
        target=torch.ops.aten.convolution.default,
        args=(SimpleNamespace(dtype=torch.float32, shape=Raising()),),
        kwargs={},
    ),
    "output meta raises": lambda: SimpleNamespace(target=torch.ops.aten.relu.default, args=(), meta={"val": Raising()}),
}


@pytest.mark.parametrize("make", list(NASTY_NODES.values()), ids=list(NASTY_NODES))
def test_validators_answer_nodes_whose_attributes_raise(make, targets):
    """The entry point Torch-TensorRT calls is total: an unreadable node at 7.5 is kept off TensorRT."""
    targets("7.5")
    node = make()
    answers = {name: validator(node, None) for name, validator in V.items()}
    assert all(a in (True, False) for a in answers.values())
    assert not all(answers.values())  # at least the rule that choked keeps it off TensorRT


@pytest.mark.parametrize("make", list(NASTY_NODES.values()), ids=list(NASTY_NODES))
def test_validators_restrict_nothing_off_turing_even_for_unreadable_nodes(make, targets):
    targets("8.9")
    node = make()
    assert all(validator(node, None) is True for validator in V.values())


@pytest.mark.parametrize("make", list(NASTY_NODES.values()), ids=list(NASTY_NODES))
def test_rule_checks_never_raise_on_nodes_whose_attributes_raise(make):
    node = make()
    for rule in guards.RULES:
        for name in (None, *rule.targets):
            assert rule.rejects(node, name) in (True, False)


@given(data=st.data())
def test_validators_on_symbolic_nodes_match_static_ones(node_pool, data):
    """Export with torch.export Dims gives the same decisions as the static export (plus cdist's safe side)."""
    static = [n for n in node_pool.nodes["static"] if n.op == "call_function"]
    dynamic = [n for n in node_pool.nodes["dynamic"] if n.op == "call_function"]
    assert [str(n.target) for n in static] == [str(n.target) for n in dynamic]
    i = data.draw(st.integers(0, len(static) - 1), label="index")
    target = data.draw(st.sampled_from(["7.5", "8.9", "8.9,7.5"]), label="targets")
    with guards.declare_targets(target):
        a, b = guards.rejecting_rule(static[i]), guards.rejecting_rule(dynamic[i])
    if str(static[i].target) == "aten._cdist_forward.default":
        assert a is b or (a is None and b is RULE["cdist_matmul"])
    else:
        assert a is b


# === through the real partitioners ================================================================
# What lands in TensorRT (``_run_on_acc_*``) and what falls back to PyTorch (``_run_on_gpu_*``), per declared
# target, dtype and backend: every model exported with ``torch.export``, lowered with Torch-TensorRT's own
# decompositions and ``post_lowering`` and partitioned by ``fast_partition`` (or the whole ``dynamo.compile``
# in dry-run mode), the validators consulted by the partitioner itself.

LINEAR = "aten.linear.default"
RELU = "aten.relu.default"
CDIST = "aten._cdist_forward.default"
MATMUL = "aten.matmul.default"
CONV = "aten.convolution.default"

mlp = tm.mlp
lowered_mlp = tm.lowered_mlp
_attention = tm.attention_graph
gemm = tm.gemm_graph
cdist_forward = tm.cdist_forward_graph
conv = tm.conv_graph


def fired(rule: str, target: str) -> int:
    return guards.fired().get((rule, target), 0)


# --- [Linear, ReLU, Linear] ----------------------------------------------------------------------


def test_fp32_mlp_at_turing_moves_both_linears_to_pytorch_and_keeps_relu_on_trt(targets, guarded):
    targets("7.5")
    before = fired("fp32_gemm", LINEAR)
    model, (x,) = mlp()
    pm = tm.partition(lowered_mlp())

    assert tm.children(pm) == ["_run_on_gpu_0", "_run_on_acc_1", "_run_on_gpu_2"]
    where = tm.placement(pm)
    assert where["gpu"] == [LINEAR, LINEAR]
    assert where["acc"] == [RELU]
    assert where["inline"] == []
    assert fired("fp32_gemm", LINEAR) - before == 2
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x), rtol=0, atol=0)


def test_fp32_mlp_at_turing_without_guards_is_all_trt(targets, tt):
    """Control: stock Torch-TensorRT 2.14 keys nothing on the target, so the guards are what moves the linears."""
    targets("7.5")
    assert not guards.is_installed()
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where["gpu"] == [] and where["acc"] == [LINEAR, RELU, LINEAR]


def test_fp16_mlp_at_turing_is_all_trt(targets, guarded):
    targets("7.5")
    model, (x,) = mlp(torch.float16)
    pm = tm.partition(lowered_mlp(torch.float16))
    where = tm.placement(pm)
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}
    assert tm.children(pm) == ["_run_on_acc_0"]
    with torch.no_grad():  # CPU has FP16 linear kernels in torch 2.14
        torch.testing.assert_close(pm(x), model(x))


def test_fp32_mlp_at_ada_is_all_trt(targets, guarded):
    targets("8.9")
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


def test_fp32_mlp_targeting_turing_and_ada_is_guarded(targets, guarded):
    """An engine built for several targets must run on all of them: SM 7.5 among them is enough."""
    targets("8.9,7.5")
    assert tm.placement(tm.partition(lowered_mlp()))["gpu"] == [LINEAR, LINEAR]


@pytest.mark.parametrize("how", ["declare_backend", "TRTCAP_BACKEND"])
def test_standard_tensorrt_backend_at_turing_is_all_trt(how, targets, guarded, monkeypatch):
    targets("7.5")
    if how == "declare_backend":
        guards.declare_backend("standard")
    else:
        monkeypatch.setenv("TRTCAP_BACKEND", "standard")
    decision = guards.capability_decision()
    assert decision.backend == "standard" and not decision.targets_turing
    where = tm.placement(tm.partition(lowered_mlp()))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


def test_fp32_mlp_with_dynamic_batch_at_turing_is_guarded(targets, guarded):
    """The dynamic-shape case is the dangerous one (the engine runs and returns zeros): it must be guarded too."""
    targets("7.5")
    model, (x,) = mlp()
    batch = torch.export.Dim("batch", min=2, max=64)
    gm = tm.lower(model, (x,), dynamic_shapes=({0: batch},))
    pm = tm.partition(gm)
    assert tm.placement(pm)["gpu"] == [LINEAR, LINEAR]
    x5 = torch.randn(5, 8)
    with torch.no_grad():
        torch.testing.assert_close(pm(x5), model(x5), rtol=0, atol=0)


def test_bf16_mlp_rejected_at_turing_accepted_at_ada(targets, guarded):
    targets("7.5")
    gm = lowered_mlp(torch.bfloat16)
    where = tm.placement(tm.partition(gm))
    assert where["acc"] == [] and where["gpu"] == [LINEAR, RELU, LINEAR]
    assert fired("bf16", RELU) >= 1
    with guards.declare_targets("8.9"):
        where = tm.placement(tm.partition(lowered_mlp(torch.bfloat16)))
    assert where == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}


# --- attention ----------------------------------------------------------------------------------



# A model exported on the CPU: 2.12 and later keep one ``scaled_dot_product_attention`` node, which the guards keep
# off TensorRT in FP32 at 7.5. 2.11 lets PyTorch decompose it into the CPU's own kernel
# (``_scaled_dot_product_flash_attention_for_cpu``), which 2.11 has no converter for: it runs in PyTorch whatever
# the dtype or target. Exported on a CUDA device, 2.11's attention is a fused kernel, which 2.11 converts: the
# fused-kernel tests below hold on every release.


@pytest.fixture
def attention():
    """What the installed release's lowering makes of attention exported on the CPU (the premise test checks it)."""
    return tm.attention_lowering()


def on_trt_if_converted(attention):
    """Where an unguarded attention node lands: TensorRT where the release converts it, else PyTorch."""
    if attention.converted:
        return {"acc": [attention.node], "gpu": [], "inline": []}
    return {"acc": [], "gpu": [attention.node], "inline": []}


def test_releases_from_2_12_keep_cpu_exported_attention_one_node_and_2_11_lowers_it_to_a_cpu_kernel(attention):
    registry = tm.torch_tensorrt().dynamo.conversion._ConverterRegistry.DYNAMO_ATEN_CONVERTERS
    assert [str(n.target) for n in tm.call_function_nodes(_attention(torch.float32))
            if "getitem" not in str(n.target)] == [attention.node]
    assert any(str(target) == attention.node for target in registry) is attention.converted
    major, minor = (int(part) for part in tm.release().split(".")[:2])
    assert tm.keeps_attention_one_node() is ((major, minor) >= (2, 12))


def test_fp32_attention_at_turing_is_not_in_a_trt_block(attention, targets, guarded):
    targets("7.5")
    pm = tm.partition(_attention(torch.float32))
    where = tm.placement(pm)
    assert where == {"acc": [], "gpu": [attention.node], "inline": []}
    q, k, v = tm.inputs_for([(1, 2, 4, 8)] * 3)
    torch.testing.assert_close(pm(q, k, v), torch.nn.functional.scaled_dot_product_attention(q, k, v))


def test_fp16_attention_at_turing_stays_on_trt_where_the_release_converts_it(attention, targets, guarded):
    targets("7.5")
    where = tm.placement(tm.partition(_attention(torch.float16)))
    assert where == on_trt_if_converted(attention)


@pytest.mark.parametrize("kernel", sorted(tm.FUSED_ATTENTION))
@pytest.mark.parametrize("dtype, settings", [(torch.float32, {}), (torch.float64, {"truncate_double": True})],
                         ids=["fp32", "fp64"])
def test_fused_attention_kernel_in_fp32_at_turing_runs_in_pytorch(kernel, dtype, settings, targets, guarded):
    """What attention exported on a CUDA device lowers to on 2.11 (FP64 runs as FP32 on TensorRT)."""
    target = tm.FUSED_ATTENTION[kernel]
    targets("7.5")
    before = fired("fp32_attention", target)
    pm = tm.partition(tm.fused_attention_graph(kernel, dtype), tm.compilation_settings(**settings))
    assert tm.placement(pm) == {"acc": [], "gpu": [target], "inline": []}
    assert fired("fp32_attention", target) > before  # the partitioner may ask more than once per node


@pytest.mark.parametrize("kernel", sorted(tm.FUSED_ATTENTION))
@pytest.mark.parametrize("use_fp32_acc", [False, True])
def test_fused_attention_kernel_in_fp16_at_turing_stays_on_trt(kernel, use_fp32_acc, targets, guarded):
    """The attention converters do not read use_fp32_acc: FP16 attention stays FP16 on TensorRT."""
    targets("7.5")
    pm = tm.partition(tm.fused_attention_graph(kernel, torch.float16), fp32_acc_settings(use_fp32_acc))
    assert tm.placement(pm) == {"acc": [tm.FUSED_ATTENTION[kernel]], "gpu": [], "inline": []}


@pytest.mark.parametrize("kernel", sorted(tm.FUSED_ATTENTION))
def test_fused_attention_kernel_in_fp32_at_ada_stays_on_trt(kernel, targets, guarded):
    targets("8.9")
    pm = tm.partition(tm.fused_attention_graph(kernel, torch.float32))
    assert tm.placement(pm) == {"acc": [tm.FUSED_ATTENTION[kernel]], "gpu": [], "inline": []}


# --- the GEMM family, one op per model ---------------------------------------------------------

LOWERED_TARGET = tm.GEMM_LOWERED_TARGET



@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_gemm_lowering_keeps_the_op(op):
    calls = [str(n.target) for n in tm.call_function_nodes(gemm(op, torch.float32))]
    assert calls == [LOWERED_TARGET[op]]


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp32_gemm_at_turing_runs_in_pytorch(op, targets, guarded):
    targets("7.5")
    fn, shapes = tm.GEMM_OPS[op]
    pm = tm.partition(gemm(op, torch.float32))
    assert tm.placement(pm) == {"acc": [], "gpu": [LOWERED_TARGET[op]], "inline": []}
    args = tm.inputs_for(shapes)
    torch.testing.assert_close(pm(*args), fn(*args))


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp16_gemm_at_turing_stays_on_trt(op, targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(gemm(op, torch.float16))) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}


@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_fp32_gemm_at_ada_stays_on_trt(op, targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(gemm(op, torch.float32))) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}


# --- cdist ----------------------------------------------------------------------------------------


def cdist_frontend(mode: str, rows: int, dtype=torch.float32):
    return tm.lowered(
        ("cdist", mode, rows, dtype), lambda: (tm.Cdist(mode), tm.inputs_for([(rows, 4), (6, 4)], dtype))
    )



@pytest.mark.parametrize(
    "mode, rows",
    [("use_mm_for_euclid_dist", 5), ("use_mm_for_euclid_dist_if_necessary", 26)],
    ids=["use_mm", "default-26-rows"],
)
def test_cdist_matrix_multiply_branch_is_guarded(mode, rows, targets, guarded):
    """torch.cdist's mm branch lowers to ``_euclidean_dist`` (a plain matmul): the FP32 matmul runs in PyTorch."""
    targets("7.5")
    gm = cdist_frontend(mode, rows)
    assert not tm.nodes_with_target(gm, CDIST)
    pm = tm.partition(gm)
    where = tm.placement(pm)
    assert where["gpu"] == [MATMUL]
    assert MATMUL not in where["acc"] and where["acc"]  # the elementwise rest stays on TensorRT
    a, b = tm.inputs_for([(rows, 4), (6, 4)])
    torch.testing.assert_close(pm(a, b), torch.cdist(a, b, compute_mode=mode))


@pytest.mark.parametrize(
    "mode, rows",
    [("donot_use_mm_for_euclid_dist", 30), ("use_mm_for_euclid_dist_if_necessary", 25)],
    ids=["donot_use_mm", "default-25-rows"],
)
def test_cdist_elementwise_branch_stays_on_trt(mode, rows, targets, guarded):
    targets("7.5")
    gm = cdist_frontend(mode, rows)
    (node,) = tm.nodes_with_target(gm, CDIST)
    assert node.args[3] == (2 if mode.startswith("donot") else None)
    assert tm.placement(tm.partition(gm)) == {"acc": [CDIST], "gpu": [], "inline": []}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize(
    "mode, rows, rejected",
    [(1, 5, True), (None, 26, True), (0, 26, True), (None, 25, False), (0, 25, False), (2, 30, False)],
)
def test_cdist_forward_guard_follows_the_converter_branch_not_the_dtype(mode, rows, rejected, dtype, targets, guarded):
    """The node Torch-TensorRT's cdist converter gets: its matmul branch is rejected in FP16 and FP32 alike."""
    targets("7.5")
    gm = cdist_forward(mode, rows, dtype)
    where = tm.placement(tm.partition(gm))
    assert where == (
        {"acc": [], "gpu": [CDIST], "inline": []} if rejected else {"acc": [CDIST], "gpu": [], "inline": []}
    )


def test_cdist_forward_matmul_branch_accepted_at_ada(targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(cdist_forward(1, 5, torch.float16)))["acc"] == [CDIST]


def test_fp16_frontend_cdist_mm_branch_reaches_trt_as_a_plain_fp16_matmul(targets, guarded):
    """Documents the lowering: torch.cdist's FP16 mm branch never reaches ``_cdist_forward`` after torch.export;
    it arrives as an FP16 ``aten.matmul`` (which the FP32-GEMM guard, rightly, lets through)."""
    targets("7.5")
    gm = cdist_frontend("use_mm_for_euclid_dist", 5, torch.float16)
    assert not tm.nodes_with_target(gm, CDIST)
    (mm,) = tm.nodes_with_target(gm, MATMUL)
    assert mm.meta["val"].dtype == torch.float16
    assert MATMUL in tm.placement(tm.partition(gm))["acc"]


# --- convolution ----------------------------------------------------------------------------------



@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_conv3d_rejected_at_turing_conv2d_accepted(dtype, targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(conv(3, dtype))) == {"acc": [RELU], "gpu": [CONV], "inline": []}
    assert tm.placement(tm.partition(conv(2, dtype))) == {"acc": [CONV, RELU], "gpu": [], "inline": []}


def test_conv3d_accepted_at_ada(targets, guarded):
    targets("8.9")
    assert tm.placement(tm.partition(conv(3))) == {"acc": [CONV, RELU], "gpu": [], "inline": []}


def test_conv3d_partitioned_output_matches_eager(targets, guarded):
    targets("7.5")
    model = tm.seeded(tm.Conv, 3)
    (x,) = tm.inputs_for([(1, 2, 5, 5, 5)])
    pm = tm.partition(conv(3))
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x))


# --- the whole compiler, dry run -------------------------------------------------------------------


def _dryrun(tt, capsys, dtype=torch.float32, **settings):
    x, w, b = tm.inputs_for([(3, 8), (4, 8), (4,)], dtype, seed=3)
    ep = torch.export.export(tm.LinearInputs(), (x, w, b))
    capsys.readouterr()
    out = tt.dynamo.compile(
        ep, inputs=[x, w, b], min_block_size=1, dryrun=True, offload_module_to_cpu=True, **settings
    )
    report = capsys.readouterr().out
    where = tm.placement(out)
    return out, where, report


def test_dynamo_compile_dryrun_keeps_fp32_linear_out_of_tensorrt_at_turing(tt, targets, guarded, capsys):
    targets("7.5")
    out, where, report = _dryrun(tt, capsys)
    assert where == {"acc": [RELU], "gpu": [LINEAR], "inline": []}
    assert "Dry-Run Results" in report
    in_torch = report.split("set to run in Torch:", 1)[1].split("Note:", 1)[0]
    assert "aten.linear.default" in in_torch
    assert "Submodule name: _run_on_acc_1" in report


@pytest.mark.parametrize("fp32_acc, where", [
    (True, {"acc": [RELU], "gpu": [LINEAR], "inline": []}),
    (False, {"acc": [LINEAR, RELU], "gpu": [], "inline": []}),
])
def test_dynamo_compile_dryrun_of_fp16_linear_at_turing_follows_use_fp32_acc(fp32_acc, where, tt, targets, guarded,
                                                                              capsys):
    """The whole compile hands its settings (use_fp32_acc) to the validators."""
    targets("7.5")
    assert _dryrun(tt, capsys, torch.float16, use_fp32_acc=fp32_acc)[1] == where


def test_dynamo_compile_dryrun_keeps_fp32_linear_in_tensorrt_at_ada(tt, targets, guarded, capsys):
    targets("8.9")
    out, where, report = _dryrun(tt, capsys)
    assert where == {"acc": [LINEAR, RELU], "gpu": [], "inline": []}
    assert "set to run in Torch" not in report
    assert "Submodule name: _run_on_acc_0" in report


def test_dynamo_compile_dryrun_of_nn_linear_at_ada_is_one_trt_block(tt, targets, guarded, capsys):
    """With parameters (nn.Linear) the dry run also completes when nothing falls back to PyTorch."""
    targets("8.9")
    model, (x,) = mlp()
    out = tt.dynamo.compile(
        torch.export.export(model, (x,)), inputs=[x], min_block_size=1, dryrun=True, offload_module_to_cpu=True
    )
    assert tm.placement(out) == {"acc": [LINEAR, RELU, LINEAR], "gpu": [], "inline": []}
    assert "Submodule name: _run_on_acc_0" in capsys.readouterr().out


# --- the padded convolution, as each release lowers it --------------------------------------------
# Torch-TensorRT 2.14's post-lowering pass ``fuse_pad_into_convolution`` turns ``constant_pad_nd -> convolution``
# into ``tensorrt.conv_asym_pad.default``, which no ``aten.convolution`` guard sees; 2.11 to 2.13 have no such pass
# and keep both nodes. On every release a causal 3D convolution (a video model padding itself) must fall back to
# PyTorch on Turing, whichever node carries the convolution.

ASYM = tm.ASYM
PAD = tm.PAD


@pytest.fixture
def lowering():
    """What the installed release's lowering makes of ``PadConv`` (the premise tests below check it)."""
    return tm.pad_conv_lowering()


def pad_conv_calls(dims: int) -> list:
    return [str(n.target) for n in tm.call_function_nodes(tm.pad_conv_graph(dims))]


@pytest.mark.parametrize("dims", [2, 3])
def test_post_lowering_fuses_the_pad_into_conv_asym_pad(dims):
    """The premise on 2.14: Torch-TensorRT's own lowering leaves no aten.convolution for the guard to see."""
    if not tm.fuses_pad_into_convolution():
        pytest.skip(f"torch_tensorrt {tm.release()} has no {tm.FUSING_PASS} lowering pass, so no {ASYM} node: "
                    "test_post_lowering_without_the_fusing_pass_keeps_the_pad_and_the_convolution covers it")
    assert pad_conv_calls(dims) == [ASYM, RELU]


@pytest.mark.parametrize("dims", [2, 3])
def test_post_lowering_without_the_fusing_pass_keeps_the_pad_and_the_convolution(dims):
    """The premise on 2.11 to 2.13: the convolution stays an aten.convolution node, after its pad."""
    if tm.fuses_pad_into_convolution():
        pytest.skip(f"torch_tensorrt {tm.release()} fuses pad -> convolution ({tm.FUSING_PASS}): "
                    "test_post_lowering_fuses_the_pad_into_conv_asym_pad covers it")
    assert pad_conv_calls(dims) == [PAD, CONV, RELU]


def test_padded_conv3d_at_turing_falls_back_to_pytorch(lowering, targets, guarded):
    targets("7.5")
    before = fired("conv3d", lowering.conv)
    model, (x,) = tm.pad_conv(3)
    pm = tm.partition(tm.pad_conv_graph(3))
    where = tm.placement(pm)
    assert where["gpu"] == [lowering.conv]
    assert where["acc"] == lowering.without_conv()
    assert fired("conv3d", lowering.conv) - before == 1
    with torch.no_grad():
        torch.testing.assert_close(pm(x), model(x), rtol=0, atol=0)


def test_padded_conv3d_at_turing_without_guards_lands_on_tensorrt(lowering, targets):
    """Control: stock Torch-TensorRT puts the padded 3D convolution (fused or not) on TensorRT-RTX at 7.5."""
    targets("7.5")
    assert not guards.is_installed()
    assert tm.placement(tm.partition(tm.pad_conv_graph(3)))["acc"] == lowering.calls


def test_padded_conv3d_at_ada_stays_on_tensorrt(lowering, targets, guarded):
    targets("8.9")
    before = fired("conv3d", lowering.conv)
    assert tm.placement(tm.partition(tm.pad_conv_graph(3))) == {"acc": lowering.calls, "gpu": [], "inline": []}
    assert fired("conv3d", lowering.conv) == before


def test_padded_conv2d_at_turing_stays_on_tensorrt(lowering, targets, guarded):
    targets("7.5")
    before = fired("conv3d", lowering.conv)
    assert tm.placement(tm.partition(tm.pad_conv_graph(2))) == {"acc": lowering.calls, "gpu": [], "inline": []}
    assert fired("conv3d", lowering.conv) == before


def test_validator_on_the_real_padded_convolution_nodes(lowering, targets):
    targets("7.5")
    (node3,) = tm.nodes_with_target(tm.pad_conv_graph(3), lowering.conv)
    (node2,) = tm.nodes_with_target(tm.pad_conv_graph(2), lowering.conv)
    assert guards.convolution_capability_validator(node3) is False
    assert guards.convolution_capability_validator(node2) is True
    with guards.declare_targets("8.9"):
        assert guards.convolution_capability_validator(node3) is True


# --- use_fp32_acc: FP16 nodes, FP32 matrix multiplies --------------------------------------------
# With ``use_fp32_acc=True`` Torch-TensorRT 2.14's ``impl.matmul.matrix_multiply`` (behind matmul, mm, bmm, mv,
# dot, addmm and linear) casts FP16 operands to FP32 before the matrix multiply on a strongly typed network, which
# every TensorRT-RTX network is: the nodes say FP16, TensorRT gets an FP32 GEMM.


def fp32_acc_settings(on: bool = True):
    return tm.compilation_settings(use_fp32_acc=on)


@pytest.mark.parametrize("on, expected", [(True, "FLOAT,FLOAT"), (False, "HALF,HALF")])
def test_fp32_acc_makes_the_converter_build_fp32_matrix_multiplies_from_fp16_nodes(on, expected, targets):
    """Control on the real converters (guards off): what the rule below is about."""
    targets("8.9")
    settings = fp32_acc_settings(on)
    pm = tm.partition(tm.lowered_mlp(torch.float16), settings)
    assert tm.children(pm) == ["_run_on_acc_0"]
    _, (x,) = mlp(torch.float16)
    assert tm.matrix_multiply_input_dtypes(pm._run_on_acc_0, (x,), settings) == [expected, expected]


def test_fp16_mlp_with_fp32_acc_at_turing_moves_both_linears_to_pytorch(targets, guarded):
    targets("7.5")
    pm = tm.partition(tm.lowered_mlp(torch.float16), fp32_acc_settings())
    assert tm.placement(pm) == {"acc": [RELU], "gpu": [LINEAR, LINEAR], "inline": []}


def test_fp16_attention_with_fp32_acc_at_turing_stays_on_trt_where_the_release_converts_it(attention, targets,
                                                                                          guarded):
    """The attention converters do not read use_fp32_acc: FP16 attention stays FP16 on TensorRT."""
    targets("7.5")
    pm = tm.partition(_attention(torch.float16), fp32_acc_settings())
    assert tm.placement(pm) == on_trt_if_converted(attention)


def test_gemm_validator_reads_use_fp32_acc_from_the_settings_it_is_given(targets):
    fp16 = the_node(tm.gemm_graph("mm", torch.float16), GEMM_TARGET["mm"])
    targets("7.5")
    assert V["gemm_capability_validator"](fp16, fp32_acc_settings()) is False
    assert V["gemm_capability_validator"](fp16, fp32_acc_settings(False)) is True
    assert V["gemm_capability_validator"](fp16) is True  # no settings: the converter's default (off)
    # the converter reads the flag by truth value (``and settings.use_fp32_acc``), and so does the rule
    assert V["gemm_capability_validator"](fp16, SimpleNamespace(use_fp32_acc=1)) is False
    assert V["gemm_capability_validator"](fp16, SimpleNamespace(use_fp32_acc=0)) is True


# --- FP64: TensorRT has no double, so Torch-TensorRT runs FP64 GEMMs as FP32 ------------------------
# ``torch_tensorrt.dtype.f64`` maps to ``trt.DataType.FLOAT`` and ``truncate_double=True`` truncates double weights
# to float32: an FP64 GEMM placed on TensorRT is an FP32 GEMM there.


def truncating():
    return tm.compilation_settings(truncate_double=True)


@pytest.mark.parametrize("op", ["mm", "addmm"])
def test_fp64_gemm_reaches_the_network_as_an_fp32_matrix_multiply(op, targets):
    """Control on the real converters (guards off): what the FP64 cases below are about."""
    targets("8.9")
    fn, shapes = tm.GEMM_OPS[op]
    pm = tm.partition(gemm(op, torch.float64), truncating())
    assert tm.placement(pm) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}
    args = tm.inputs_for(shapes, torch.float64)
    assert tm.matrix_multiply_input_dtypes(pm._run_on_acc_0, args, truncating()) == ["FLOAT,FLOAT"]


#: GEMM nodes that are not FP32 but that Torch-TensorRT runs as FP32 matrix multiplies: dtype, settings.
RUN_AS_FP32 = {"fp16-use_fp32_acc": (torch.float16, fp32_acc_settings), "fp64": (torch.float64, truncating)}


@pytest.mark.parametrize("case", sorted(RUN_AS_FP32))
@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_gemm_run_as_fp32_at_turing_runs_in_pytorch(op, case, targets, guarded):
    dtype, settings = RUN_AS_FP32[case]
    targets("7.5")
    pm = tm.partition(gemm(op, dtype), settings())
    assert tm.placement(pm) == {"acc": [], "gpu": [LOWERED_TARGET[op]], "inline": []}


@pytest.mark.parametrize("case", sorted(RUN_AS_FP32))
@pytest.mark.parametrize("op", sorted(tm.GEMM_OPS))
def test_gemm_run_as_fp32_at_ada_stays_on_trt(op, case, targets, guarded):
    dtype, settings = RUN_AS_FP32[case]
    targets("8.9")
    pm = tm.partition(gemm(op, dtype), settings())
    assert tm.placement(pm) == {"acc": [LOWERED_TARGET[op]], "gpu": [], "inline": []}


def test_fp64_mlp_and_attention_at_turing_run_in_pytorch(attention, targets, guarded):
    targets("7.5")
    assert tm.placement(tm.partition(lowered_mlp(torch.float64), truncating()))["gpu"] == [LINEAR, LINEAR]
    assert tm.placement(tm.partition(_attention(torch.float64), truncating()))["gpu"] == [attention.node]
