#!/usr/bin/env bash
# The optimized graphs of the trees a GPU run measured, for bench/gpu/refit_profile.py --graphs:
# builds eqfuse at the commit the trees were written at (the results' "trees_commit"; the
# committed results in bench/gpu/results predate that field and come from 5ebd89c) in a
# worktree, and writes OUT/MODEL.onnx with its `eqfuse optimize` for each model of the trees,
# from the source prepare.sh compiled. A later optimizer may fuse differently, and the kernels
# are matched to the measurements by name.
#   bench/gpu/measured_graphs.sh COMMIT OUT [TREES]     (TREES default bench/gpu/trees)
set -euo pipefail
commit=$1
out=$(realpath -m "$2")
cd "$(dirname "$0")/../.."
trees=$(realpath "${3:-bench/gpu/trees}")
work=${TMPDIR:-/tmp}/eqfuse-at-$commit
[ -d "$work" ] || git worktree add -f --detach "$work" "$commit"
[ -x "$work/build/tools/eqfuse" ] || {
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$work/build" eqfuse
}
mkdir -p "$out"
for compiled in "$trees"/*.compile.json; do
  model=$(basename "$compiled" .compile.json)
  case $model in *.*) continue ;; esac  # the specialized and bf16 trees share these graphs
  src=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['model'])" "$compiled")
  "$work/build/tools/eqfuse" optimize "$src" -o "$out/$model.onnx" > /dev/null
  echo "$model: $out/$model.onnx"
done
