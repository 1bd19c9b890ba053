#!/usr/bin/env bash
# The ablation of the optimizer's phases on every shared model, side by side in one run:
# kernels and predicted time (h200-calibrated) after algebra only, fusion only, algebra then
# fusion as two separate steps (extract after the algebra, then fuse that graph: a TASO-then-
# Inductor pipeline), and both in one e-graph (eqfuse's default).
#   bench/ablation.sh EQFUSE_BINARY [SHARED_MODELS_DIR]
set -euo pipefail
eqfuse=$(realpath "$1")
models=${2:-$(dirname "$0")/../../shared/models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # model, flags... -> "kernels ms seconds"
  local model=$1
  shift
  "$eqfuse" optimize "$model" -o "$tmp/out.onnx" --device h200-calibrated --json --no-verify "$@" |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["kernels_after"], "%.4f" % j["predicted_ms_after"], "%.2f" % j["seconds"])'
}
echo "| model | before: kernels, ms | algebra only | fusion only | algebra, then fusion | joint (default) | joint vs sequential |"
echo "|---|---|---|---|---|---|---|"
for dir in "$models"/*/; do
  m=$(basename "$dir")
  [ -f "$dir/model.onnx" ] || continue
  before=$("$eqfuse" optimize "$dir/model.onnx" -o "$tmp/out.onnx" --device h200-calibrated --json --no-verify --phases algebra |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["kernels_before"], "%.4f" % j["predicted_ms_before"])')
  read -r ak ams _ < <(run "$dir/model.onnx" --phases algebra)
  read -r fk fms _ < <(run "$dir/model.onnx" --phases fusion)
  read -r sk sms _ < <(run "$dir/model.onnx" --sequential)
  read -r jk jms js < <(run "$dir/model.onnx")
  ratio=$(python3 -c "print('%.3fx' % ($sms / $jms))")
  echo "| $m | ${before/ /, } | $ak, $ams | $fk, $fms | $sk, $sms | $jk, $jms ($js s) | $ratio |"
done
