#!/bin/bash
# The layer audit on a CUDA host, in one device call (docs/layer-audit.md):
#   capture: engine layer information captured for the test data (.ci/capture_engine_layers.py -> $OUT/engine_layers);
#   suite: the plugin's engine audit on a small compile suite (.ci/engine_suite, guards off, declared 7.5);
#   conversion: Torch-TensorRT's converter tests at a declared 7.5 under --trtcap-audit-layers, recorded as a trtcap
#      stream (which survives a timeout) in $OUT/conversion_stream.jsonl, the terminal output in
#      $OUT/conversion.log.gz; every engine the audit reads is dumped (.ci/dump_engine_layers.py) and packed in
#      $OUT/engine_dumps.tar.xz, and what the engine table does not know of them is listed
#      (.ci/unknown_engine_layers.py) in $OUT/unknown_engine_layers.json;
#   check: .ci/device_check.py's step 11 alone (the engine half of the layer audit).
# STEPS picks them (default: "capture suite conversion").
# Before: on a machine that reaches the package index, `bash shared/gpu-host/prepare.sh .gpuhost`, copy
# shared/gpu-host/install.sh into .gpuhost/, and put the converter tests there, with a pytest.ini of their own:
#   git --git-dir=<a clone of pytorch/TensorRT>/.git archive HEAD tests/py/dynamo/conversion | tar -x -C /tmp/tt
#   cp -r /tmp/tt/tests/py/dynamo/conversion .gpuhost/conversion
#   printf '[pytest]\naddopts = -p no:cacheprovider\n' > .gpuhost/conversion/pytest.ini
# (or packed, to keep what travels under its limit: tar cJf .gpuhost/conversion.tar.xz -C .gpuhost/conversion .; carry
# .gpuhost's files then, not the folder itself)
# Then, on the host (the run tool: carry .gpuhost): bash .ci/layer_audit_gpu.sh
STEPS=${STEPS:-capture suite conversion}
eval "$(bash .gpuhost/install.sh .gpuhost | tail -1)"
mkdir -p /tmp/alias && ln -sfn "$PWD/guards" /tmp/alias/trtcap_guards
export PYTHONPATH=/tmp/alias:$PWD:$PWD/.ci:$PYTHONPATH
OUT=${OUT:-/tmp/layer-audit-out}
nvidia-smi -L
python3 -c "import torch, torch_tensorrt, tensorrt; print(torch.__version__, torch_tensorrt.__version__, tensorrt.__version__)" 2>&1 | tail -1
date -u
if [[ " $STEPS " == *" capture "* ]]; then
  timeout 170 python3 .ci/capture_engine_layers.py "$OUT/engine_layers" 2>&1 | grep -v "Warn\|^W1\|warn" | tail -30
fi
if [[ " $STEPS " == *" suite "* ]]; then
  (cd .ci/engine_suite && timeout 100 python3 -m pytest -p pytest_trtcap.plugin --trt-target-sm 7.5 --trtcap-guards off \
    --trtcap-audit-layers -q > "$OUT/engine_suite.log" 2>&1; tail -25 "$OUT/engine_suite.log")
fi
if [[ " $STEPS " == *" check "* ]]; then
  timeout 150 python3 -c "import sys; sys.path.insert(0, '.ci'); import device_check as d; d.check_engine_layers()" \
    2>&1 | grep -v "Warn\|^W1\|warn" | tee "$OUT/device_check_11.log" | tail -15
fi
if [[ " $STEPS " == *" conversion "* ]]; then
  [ -d .gpuhost/conversion ] || (mkdir .gpuhost/conversion && tar xJf .gpuhost/conversion.tar.xz -C .gpuhost/conversion)
  DUMP=/tmp/engine_dumps; rm -rf "$DUMP"
  (cd .gpuhost/conversion && date -u && TRTCAP_ENGINE_DUMP=$DUMP timeout "${CONV_TIMEOUT:-200}" python3 -m pytest \
    -p pytest_trtcap.plugin -p pytest_trtcap.runs.recorder -p dump_engine_layers \
    --trtcap-record="$OUT/conversion_stream.jsonl" --trt-target-sm 7.5 --trtcap-audit-layers -n 14 -q -p no:randomly \
    --continue-on-collection-errors > /tmp/conversion.log 2>&1; echo "conversion exit $?"; date -u)
  grep -E "passed|failed|layer audit|guards fired" /tmp/conversion.log | tail -8
  grep -oE " -> [a-z0-9_]+: " /tmp/conversion.log | sort | uniq -c
  gzip -c /tmp/conversion.log > "$OUT/conversion.log.gz"
  ls "$DUMP" | wc -l
  tar cJf "$OUT/engine_dumps.tar.xz" -C "$DUMP" .
  python3 .ci/unknown_engine_layers.py "$DUMP" "$OUT/unknown_engine_layers.json"
  python3 -c "import json; s = json.load(open('$OUT/unknown_engine_layers.json')); print(s['engines'], s['layers'], \
s['categories'], s['unknown_tokens']); [print(g['count'], k, g['layer_types'], g['dtypes']) for k, g in s['groups'].items()]"
fi
date -u
