"""Checks that need a real CUDA device; run by hand on a GPU host (CI has none).

    python3 .ci/device_check.py

What it proves on a host with a CUDA device (no Torch-TensorRT needed):
1. the host-capability fallback: with nothing declared, targets come from the device ("host device");
2. a declaration still outranks the device (Turing simulated on a non-Turing GPU);
3. the GPU-less import path stays off: ``answer_device_queries`` answers nothing and leaves torch.cuda alone;
4. the plugin on that host: fixtures report the host device, the marker follows ``--trt-target-sm``, and the
   import hook, when something named ``torch_tensorrt`` is imported, leaves the device queries untouched.
   Torch-TensorRT is not installed there, so a probe package of that name records what it sees at import;
5. the builder-targets decision (``guards.builder_targets``): nothing declared and a real device -> CURRENT;
   declared targets outrank it; the standard backend sets nothing. (Without Torch-TensorRT no builder config
   exists there: only the decision can be checked.)
7. a session that uses nothing of the plugin stays dormant on a GPU host too (no per-session module loaded, torch
   not imported); a capability marker wakes it and the host device decides (no skip on a non-Turing GPU).
6. ``--trtcap-needs-gpu skip`` does nothing where a CUDA device exists: a CUDA-only kernel called on CPU
   tensors stays a failure and the verbose header says why; with the device hidden (``CUDA_VISIBLE_DEVICES=``)
   the same test is a ``trtcap: needs a GPU`` skip, so the check exercises a real signature.
With Torch-TensorRT installed (``shared/gpu-host``: torch-tensorrt-rtx 2.11 with TensorRT-RTX 1.4):
8. a real compile at a declared 7.5 with the guards installed keeps the FP32 linear in PyTorch, the compiled module
   matches eager (``assert_trt_close``), and ``assert_servable_placements`` refuses the compiled module (its TensorRT
   blocks are engines with no graph to audit) instead of passing it;
9. the builder config of a real build carries exactly the declared capabilities (read back from the config);
10. ``trtcap sweep --arms 7.5,8.9 -- examples`` is COMPLETE, with the same arm differences as with the device hidden
    (``CUDA_VISIBLE_DEVICES=``: what a CPU runner sees);
11. the engine half of the layer audit: a compiled FP32 MLP built with Torch-TensorRT's default verbosity
    (LAYER_NAMES_ONLY) is ``precision_unknown`` for ``unservable_layers``, never a pass; built while the layer audit's
    interpreter wrapper is active (``DETAILED``), its GEMM kernels are ``fp32_gemm`` findings at a declared 7.5 and
    nothing at 8.9; the FP16 MLP, and the FP32 one compiled with the guards at 7.5, have none.
Exits non-zero on the first failed check.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# guards/ installs as trtcap_guards (package-dir) and refuses any other name: alias it for a plain checkout.
ALIAS = Path(tempfile.mkdtemp(prefix="trtcap-alias-"))
atexit.register(shutil.rmtree, ALIAS, True)
(ALIAS / "trtcap_guards").symlink_to(ROOT / "guards", target_is_directory=True)
sys.path[:0] = [str(ALIAS), str(ROOT)]

import torch  # noqa: E402

import trtcap_guards as guards  # noqa: E402


def check(label: str, ok: bool, detail: object = "") -> None:
    print(f"{'PASS' if ok else 'FAIL'}: {label} {detail}")
    if not ok:
        sys.exit(1)


def main() -> None:
    assert torch.cuda.is_available(), "run this on a host with a CUDA device"
    host = tuple(torch.cuda.get_device_capability(0))
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name(0)}, capability {host}")

    decision = guards.capability_decision()
    check("host fallback source", decision.source == "host device", decision)
    check("host fallback targets", decision.targets == (host,), decision.targets)
    check("host is not Turing", decision.targets_turing is (host == (7, 5)), decision.reason)

    with guards.declare_targets("7.5", origin="device-check"):
        d = guards.capability_decision()
        check("declaration outranks the device", d.source == "declared" and d.targets == ((7, 5),), d)
        check("Turing simulated on this GPU", d.targets_turing is (d.backend != "standard"), d.reason)
    check("declaration undone", guards.capability_decision().source == "host device")

    plan = guards.builder_targets()
    check("builder: CURRENT for the real device", plan.current and plan.capabilities == (), plan.describe())
    with guards.declare_targets("7.5,8.9", origin="device-check"):
        plan = guards.builder_targets()
        check("builder: declared targets outrank the device",
              plan.capabilities == ((7, 5), (8, 9)) and not plan.current, plan.describe())
    with guards.declare_backend("standard", origin="device-check"):
        check("builder: standard backend sets nothing", not guards.builder_targets().sets_anything)

    original = torch.cuda.get_device_capability
    check("answer_device_queries stays off", guards.answer_device_queries((7, 5)) is False)
    check("torch.cuda untouched", torch.cuda.get_device_capability is original)
    status = guards.gpu_less_import_status()
    check("status says why", not status.applied and "CUDA device present" in status.detail, status.detail)

    with tempfile.TemporaryDirectory() as tmp:
        check_plugin_on_gpu_host(Path(tmp), host)
        check_needs_gpu(Path(tmp))
        check_dormant(Path(tmp))
    if importlib.util.find_spec("torch_tensorrt") is None:
        print("SKIP: Torch-TensorRT is not installed: checks 8-10 need it")
    else:
        check_compile_at_turing()
        check_builder_config()
        check_engine_layers()
        check_examples_sweep()
    print("all device checks passed")


def check_plugin_on_gpu_host(tmp_path: Path, host: tuple) -> None:
    """4: the plugin with a probe package named torch_tensorrt that records the device queries it sees."""
    tmp = str(tmp_path)
    probe = tmp_path / "probe" / "torch_tensorrt"
    probe.mkdir(parents=True)
    (probe / "__init__.py").write_text(textwrap.dedent("""
        import torch
        ANSWERED = hasattr(torch.cuda.get_device_capability, "__trtcap_answer__")
        CAPABILITY = torch.cuda.get_device_capability()
    """))
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text("import torch_tensorrt\n")
    (suite / "test_host.py").write_text(textwrap.dedent(f"""
        import pytest, torch, torch_tensorrt

        def test_probe_saw_the_real_device():
            assert torch_tensorrt.ANSWERED is False
            assert tuple(torch_tensorrt.CAPABILITY) == {host!r}

        def test_fixtures(trt_capability, trt_targets_turing, turing_safe_gemm_dtype):
            declared = bool(trt_capability.source == "declared")
            if not declared:
                assert trt_capability.source == "host device"
                assert trt_capability.targets == ({host!r},)
            assert turing_safe_gemm_dtype == (torch.float16 if trt_targets_turing else torch.float32)

        @pytest.mark.trt_fp32_gemm
        def test_fp32_gemm():
            pass
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "probe"), str(ALIAS), str(ROOT)]))
    for args, expect in (([], "3 passed"), (["--trt-target-sm", "7.5"], "2 passed, 1 skipped")):
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "pytest_trtcap.plugin", "-p", "no:cacheprovider",
             "-rs", "-v", "--trtcap-guards", "off", str(suite), *args],
            capture_output=True, text=True, env=env, cwd=tmp,
        )
        out = run.stdout + run.stderr
        print(textwrap.indent(out.strip(), "    | "))
        check(f"plugin on a GPU host {args}", run.returncode == 0 and expect in out)
        check("header: gpu-less import not applied", "not needed (CUDA device present)" in out
              or "auto (answers device queries only" in out)


NEEDS_GPU_TEST = """
import torch

def test_cuda_only_kernel_on_cpu_tensors():
    q = torch.randn(1, 2, 4, 8)
    torch.ops.aten._scaled_dot_product_efficient_attention(q, q, q, None, False)
"""


def check_needs_gpu(tmp_path: Path) -> None:
    suite = tmp_path / "needs_gpu"
    suite.mkdir()
    (suite / "test_kernel.py").write_text(NEEDS_GPU_TEST)
    # As Torch-TensorRT's suites do: torch imported by the conftest, so the header can probe the host.
    (suite / "conftest.py").write_text("import torch\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ALIAS), str(ROOT)]))
    for hidden, expect in ((False, "1 failed"), (True, "1 skipped")):
        run_env = dict(env, CUDA_VISIBLE_DEVICES="") if hidden else env
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "pytest_trtcap.plugin", "-p", "no:cacheprovider", "-v", "-rs",
             "--trtcap-needs-gpu", "skip", str(suite)],
            capture_output=True, text=True, env=run_env, cwd=tmp_path,
        )
        out = run.stdout + run.stderr
        shown = [line for line in out.splitlines() if "trtcap" in line or "==" in line]
        print(textwrap.indent("\n".join(shown), "    | "))
        check(f"needs-gpu skip, device {'hidden' if hidden else 'visible'}: {expect}", expect in out)
        if hidden:
            check("skip reason names the signature", "trtcap: needs a GPU: " in out and "cuda-only-kernel" in out)
        else:
            check("header: the setting does nothing here", "does nothing: a CUDA device exists" in out)



DORMANT_CONFTEST = """
import sys

def pytest_unconfigure(config):
    print("LOADED", "pytest_trtcap.session" in sys.modules, "torch" in sys.modules)
"""


def check_dormant(tmp_path: Path) -> None:
    """7: dormant until used, on a host with a CUDA device."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ALIAS), str(ROOT)]))
    for name, test, expect in (("plain", "def test_plain():\n    pass\n", "LOADED False False"),
                               ("marked", "import pytest\n\n@pytest.mark.trt_fp32_gemm\ndef test_marked():\n"
                                          "    pass\n", "LOADED True True")):
        suite = tmp_path / f"dormant_{name}"
        suite.mkdir()
        (suite / "conftest.py").write_text(DORMANT_CONFTEST)
        (suite / "test_it.py").write_text(test)
        run = subprocess.run([sys.executable, "-m", "pytest", "-p", "pytest_trtcap.plugin", "-p", "no:cacheprovider",
                              "-s", "-rs", str(suite)], capture_output=True, text=True, env=env, cwd=str(tmp_path))
        out = run.stdout + run.stderr
        print(textwrap.indent(out.strip(), "    | "))
        check(f"dormant: {name} suite ({expect})", run.returncode == 0 and "1 passed" in out and expect in out)


class ConvHead(torch.nn.Module):
    """A conv (served on every target) feeding an FP32 linear (not served on Turing)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.head = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.relu(self.conv(x)).flatten(1))


def _compile(model: torch.nn.Module, x: torch.Tensor) -> torch.nn.Module:
    import torch_tensorrt

    exported = torch.export.export(model, (x,))
    return torch_tensorrt.dynamo.compile(exported, arg_inputs=[x], min_block_size=1)


def check_compile_at_turing() -> None:
    """8: a real compile at a declared 7.5, guards installed."""
    from pytest_trtcap import assert_servable_placements, assert_trt_close

    model, x = ConvHead().eval().cuda(), torch.randn(2, 3, 8, 8, device="cuda")
    with guards.declare_targets("7.5", origin="device-check"), guards.installed():
        compiled = _compile(model, x)
    in_pytorch = [str(n.target) for name, child in compiled.named_children() if name.startswith("_run_on_gpu")
                  for n in child.graph.nodes if n.op == "call_function"]
    print(f"    | blocks: {[name for name, _ in compiled.named_children()]}; in PyTorch: {in_pytorch}")
    check("compile at 7.5: the FP32 linear runs in PyTorch", "aten.linear.default" in in_pytorch, in_pytorch)
    with torch.no_grad():  # TensorRT's convolution may use TF32: 4e-4 apart on an H200
        assert_trt_close(compiled(x), model(x), rtol=1e-2, atol=1e-3)
    check("compile at 7.5: matches eager (assert_trt_close, rtol 1e-2, atol 1e-3)", True)
    try:
        assert_servable_placements(compiled)
    except TypeError as exc:
        check("assert_servable_placements refuses a compiled module", True, f"({str(exc).splitlines()[0]})")
    else:
        check("assert_servable_placements refuses a compiled module", False, "it passed")


def check_builder_config() -> None:
    """9: the capabilities a real build's builder config carries, read back from the config."""
    from torch_tensorrt.dynamo.conversion import TRTInterpreter

    seen: list = []
    model, x = torch.nn.Sequential(torch.nn.Linear(8, 4)).eval().half().cuda(), torch.randn(2, 8).half().cuda()
    with guards.installed():
        wrapped = TRTInterpreter._populate_trt_builder_config  # the guards' wrapper, installed just now
        check("builder: the guards wrap the builder config", guards.builder_targets_installed())

        def spy(self, *args, **kwargs):
            config = wrapped(self, *args, **kwargs)
            seen.append(tuple(config.get_compute_capability(i).name for i in range(config.num_compute_capabilities)))
            return config

        TRTInterpreter._populate_trt_builder_config = spy
        try:
            for declared, expect in ((None, ("CURRENT",)), ("7.5", ("SM75",)), ("8.9", ("SM89",)),
                                     ("7.5,8.9", ("SM75", "SM89"))):
                seen.clear()
                if declared is None:
                    _compile(model, x)
                else:
                    with guards.declare_targets(declared, origin="device-check"):
                        _compile(model, x)
                check(f"builder config, declared {declared}: {expect}", seen and seen[-1] == expect, seen)
        finally:
            TRTInterpreter._populate_trt_builder_config = wrapped


def check_engine_layers() -> None:
    """11: what a real engine holds, read back through get_layer_info() and judged by the layer audit."""
    from pytest_trtcap import unservable_layers
    from pytest_trtcap.layer_audit import LayerAudit

    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).eval().cuda()
    x = torch.randn(4, 16, device="cuda")
    with guards.declare_targets("7.5", origin="device-check"):
        kinds = sorted({f.kind for f in unservable_layers(_compile(mlp, x))})
        check("engine, names only: precision unknown, never a pass", kinds == ["precision_unknown"], kinds)
    audit = LayerAudit(lambda: "device-check")
    audit.activate()
    try:
        compiled = _compile(mlp, x)
        with guards.declare_targets("7.5", origin="device-check"):
            found = unservable_layers(compiled)
            print("    | " + "\n    | ".join(f.describe() for f in found))
            check("engine, DETAILED, 7.5: FP32 GEMM kernels found", bool(found) and {f.kind for f in found} == {
                "fp32_gemm"}, [f.kind for f in found])
            half = unservable_layers(_compile(mlp.half(), x.half()))
            check("engine, DETAILED, 7.5: the FP16 MLP has none", half == [], [f.describe() for f in half])
            with guards.installed():
                guarded = unservable_layers(_compile(mlp.float(), x))
            check("engine, DETAILED, 7.5, guards: no FP32 GEMM kernel", guarded == [], [f.describe() for f in guarded])
        with guards.declare_targets("8.9", origin="device-check"):
            check("engine, DETAILED, 8.9: nothing", unservable_layers(compiled) == [])
    finally:
        audit.deactivate()
    check("engine audit: the interpreter put back", not hasattr(
        importlib.import_module("torch_tensorrt.dynamo.conversion._TRTInterpreter").TRTInterpreter.run,
        "__trtcap_audited__"))


def _sweep_examples(hide_device: bool) -> tuple:
    """The examples' sweep on this host, or as a CPU runner sees it (the device hidden); its arm differences."""
    paths = [str(ALIAS), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]  # Torch-TensorRT's site too
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    if hide_device:
        env["CUDA_VISIBLE_DEVICES"] = ""
    with tempfile.TemporaryDirectory() as out:
        run = subprocess.run([sys.executable, "-m", "pytest_trtcap", "sweep", "--arms", "7.5,8.9", "--out", out,
                              "--format", "json", "--", "examples"], capture_output=True, text=True, env=env,
                             cwd=str(ROOT))
    where = "device hidden" if hide_device else "on the device"
    try:
        summary = json.loads(run.stdout)
    except ValueError:
        print(textwrap.indent((run.stdout + run.stderr)[-6000:], "    | "))
        check(f"examples sweep ({where}): a JSON report", False, f"exit {run.returncode}")
    for arm in summary["arms"]:
        print(f"    | {where}: arm {arm['arm']}: {arm['result']}, {arm['counts']}")
        if arm.get("stderr_tail"):
            print(textwrap.indent(str(arm["stderr_tail"])[-3000:], f"    | {where}: arm {arm['arm']} stderr: "))
    diffs = sorted((d["class"], d["nodeid"]) for d in summary["differences"])
    for cls, nodeid in diffs:
        print(f"    | {where}: {cls}: {nodeid}")
    check(f"examples sweep ({where}): COMPLETE, exit 0", summary["result"] == "COMPLETE" and run.returncode == 0,
          f"exit {run.returncode}")
    return tuple(diffs)


def check_examples_sweep() -> None:
    """10: the main job on the bundled examples, on this host and with the device hidden (a CPU runner)."""
    on_device = _sweep_examples(hide_device=False)
    as_cpu_runner = _sweep_examples(hide_device=True)
    check("examples sweep: the same arm differences as on a CPU runner", on_device == as_cpu_runner,
          f"{on_device} vs {as_cpu_runner}")


if __name__ == "__main__":
    main()
