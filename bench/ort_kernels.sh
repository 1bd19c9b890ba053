#!/usr/bin/env bash
# Kernels launched per shared model: the original, eqfuse's optimized model, and what ONNX
# Runtime's own graph optimizer leaves (CPU provider, level "extended"), counted the same way
# (every node but Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout and Constant), with
# predicted h200-calibrated time before and after and the optimization time. Also checks that
# ONNX Runtime loads and runs each optimized model (its kernels are model-local functions) and
# that its outputs agree with the original's in ONNX Runtime (bench/ort_compare.js).
#   bench/ort_kernels.sh EQFUSE_BINARY ORT_DIR [SHARED_MODELS_DIR]
# ORT_DIR holds node_modules/onnxruntime-node (npm install --ignore-scripts onnxruntime-node);
# never a dependency of the build or the tests. Structure-only models (no weights) are skipped
# for ONNX Runtime.
set -euo pipefail
eqfuse=$(realpath "$1")
ort_dir=$(realpath "$2")
models=${3:-$(dirname "$0")/../../shared/models}
here=$(realpath "$(dirname "$0")")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() {
  "$eqfuse" info "$1" --json | python3 -c '
import json, sys
free = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Constant"}
ops = json.load(sys.stdin)["ops"]
print(sum(n for op, n in ops.items() if op.split(".")[-1] not in free))'
}
echo "| model | kernels before | eqfuse after | ONNX Runtime (extended) | predicted ms before | after (h200-calibrated) | optimize s | ORT runs eqfuse's output and agrees |"
echo "|---|---|---|---|---|---|---|---|"
for dir in "$models"/*/; do
  m=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  out="$tmp/$m.onnx"
  json=$("$eqfuse" optimize "$dir/model.onnx" -o "$out" --device h200-calibrated --json --no-verify)
  read -r before after msb msa secs < <(echo "$json" | python3 -c '
import json, sys
j = json.load(sys.stdin)
print(j["kernels_before"], j["kernels_after"], "%.4f" % j["predicted_ms_before"],
      "%.4f" % j["predicted_ms_after"], "%.2f" % j["seconds"])')
  ort="n/a (no weights)"
  runs="n/a"
  if [ -d "$dir/test_data_set_0" ]; then
    if (NODE_PATH="$ort_dir/node_modules" node "$here/ort_run.js" "$dir/model.onnx" "$tmp/$m.ort.onnx" >/dev/null); then
      ort=$(count "$tmp/$m.ort.onnx")
    fi
    runs=$(NODE_PATH="$ort_dir/node_modules" node "$here/ort_compare.js" "$dir/model.onnx" "$out" |
      python3 -c 'import json,sys; j=json.load(sys.stdin); print("yes, max diff %.1e" % j["max_abs_diff"] if j["ok"] else "NO")')
  fi
  echo "| $m | $before | $after | $ort | $msb | $msa | $secs | $runs |"
done
