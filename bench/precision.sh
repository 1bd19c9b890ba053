#!/usr/bin/env bash
# --precision on every shared model with weights, side by side in one run: each model is
# optimized once, and its C++ twin runs the first test set with f32, f16 and bf16 storage. Per
# precision: the largest absolute error against the test data, and whether every output is
# within that precision's tolerance (codegen::precision_tolerance: f32 rtol 1e-3 atol 1e-4 here,
# f16 1e-2/1e-2, bf16 5e-2/5e-2).
#   bench/precision.sh EQFUSE_BINARY [SHARED_MODELS_DIR]
set -euo pipefail
eqfuse=$(realpath "$1")
models=${2:-$(dirname "$0")/../../shared/models}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| model | f32: max abs error | f16 | bf16 |"
echo "|---|---|---|---|"
for dir in "$models"/*/; do
  m=$(basename "$dir")
  [ -f "$dir/model.onnx" ] && [ -d "$dir/test_data_set_0" ] || continue
  "$eqfuse" optimize "$dir/model.onnx" -o "$tmp/out.onnx" --no-verify --json > /dev/null 2>&1 || continue
  row="| $m |"
  for p in f32 f16 bf16; do
    tol=()
    [ "$p" = f32 ] && tol=(--atol 1e-4)
    j=$("$eqfuse" run "$tmp/out.onnx" --backend cpu --precision "$p" --test-data "$dir/test_data_set_0" \
      --json "${tol[@]}" 2> /dev/null) || [ $? -eq 1 ] || { row=""; break; }
    cell=$(python3 -c 'import json,sys; j=json.loads(sys.argv[1]); o=j["outputs"]
print("%.2g%s" % (max(x["max_abs_error"] for x in o), "" if j["match"] else " (out of tolerance)"))' "$j")
    row="$row $cell |"
  done
  [ -n "$row" ] || continue
  echo "$row"
done
