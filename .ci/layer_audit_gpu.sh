#!/bin/bash
# The layer audit on a CUDA host, in one device call (docs/layer-audit.md):
#   1. engine layer information captured for the test data (.ci/capture_engine_layers.py -> $OUT/engine_layers);
#   2. the plugin's engine audit on a small compile suite (.ci/engine_suite, guards off, declared 7.5);
#   3. Torch-TensorRT's converter tests at a declared 7.5 under --trtcap-audit-layers, recorded as a trtcap stream
#      (which survives a timeout) in $OUT/conversion_stream.jsonl, the terminal output in $OUT/conversion.log.
# Before: on a machine that reaches the package index, `bash shared/gpu-host/prepare.sh .gpuhost`, copy
# shared/gpu-host/install.sh into .gpuhost/, and put the converter tests there, with a pytest.ini of their own:
#   git --git-dir=<a clone of pytorch/TensorRT>/.git archive HEAD tests/py/dynamo/conversion | tar -x -C /tmp/tt
#   cp -r /tmp/tt/tests/py/dynamo/conversion .gpuhost/conversion
#   printf '[pytest]\naddopts = -p no:cacheprovider\n' > .gpuhost/conversion/pytest.ini
# Then, on the host (the run tool: carry .gpuhost): bash .ci/layer_audit_gpu.sh
eval "$(bash .gpuhost/install.sh .gpuhost | tail -1)"
mkdir -p /tmp/alias && ln -sfn "$PWD/guards" /tmp/alias/trtcap_guards
export PYTHONPATH=/tmp/alias:$PWD:$PYTHONPATH
OUT=${OUT:-/tmp/layer-audit-out}
nvidia-smi -L
python3 -c "import torch, torch_tensorrt, tensorrt; print(torch.__version__, torch_tensorrt.__version__, tensorrt.__version__)" 2>&1 | tail -1
timeout 170 python3 .ci/capture_engine_layers.py "$OUT/engine_layers" 2>&1 | grep -v "Warn\|^W1\|warn" | tail -30
(cd .ci/engine_suite && timeout 100 python3 -m pytest -p pytest_trtcap.plugin --trt-target-sm 7.5 --trtcap-guards off \
  --trtcap-audit-layers -q > "$OUT/engine_suite.log" 2>&1; tail -25 "$OUT/engine_suite.log")
cd .gpuhost/conversion && timeout "${CONV_TIMEOUT:-200}" python3 -m pytest -p pytest_trtcap.plugin \
  -p pytest_trtcap.runs.recorder --trtcap-record="$OUT/conversion_stream.jsonl" --trt-target-sm 7.5 \
  --trtcap-audit-layers -n 14 -q -p no:randomly --continue-on-collection-errors > "$OUT/conversion.log" 2>&1
echo "conversion exit $?"
grep -E "passed|failed|layer audit|guards fired" "$OUT/conversion.log" | tail -8
