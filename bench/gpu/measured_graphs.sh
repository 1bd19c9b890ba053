#!/usr/bin/env bash
# The optimized graphs of the trees a GPU run measured, for bench/gpu/refit_profile.py --graphs:
# builds eqfuse at the commit the trees were written at (the results' "trees_commit"; the
# committed results in bench/gpu/results predate that field and come from 5ebd89c) in a
# worktree, and writes OUT/MODEL.onnx with its `eqfuse optimize` for each model of the trees,
# from the source prepare.sh compiled. Kernels are matched to the measurements by name, and a
# later optimizer may fuse differently. prepare.sh made the batch symbolic before optimizing
# (compile --dynamic-batch) where `optimize` keeps the export's batch of 1: both gave the same
# kernels for every model of the committed run, and refit_profile.py leaves out a model whose
# stage count differs from the run's.
#   bench/gpu/measured_graphs.sh COMMIT OUT [TREES]     (TREES default bench/gpu/trees)
# The worktree stays in $TMPDIR/eqfuse-at-COMMIT for the next call (git worktree remove it).
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 COMMIT OUT [TREES]" >&2
  exit 2
fi
out=$(realpath -m "$2")
trees=$(realpath "${3:-$(dirname "$0")/trees}")
cd "$(dirname "$0")/../.."
case $1 in
  unknown) echo "the trees' commit is unknown: they were not written in a git checkout" >&2; exit 1 ;;
  *" with uncommitted changes") echo "warning: the trees had uncommitted changes; building $1 without them" >&2 ;;
esac
commit=$(git rev-parse --verify "${1%% *}^{commit}")
work=${TMPDIR:-/tmp}/eqfuse-at-$commit
if [ -d "$work" ] && [ "$(git -C "$work" rev-parse HEAD 2>/dev/null)" != "$commit" ]; then
  echo "$work is not a checkout of $commit: remove it" >&2
  exit 1
fi
[ -d "$work" ] || git worktree add -f --detach "$work" "$commit"
[ -x "$work/build/tools/eqfuse" ] || {
  cmake -S "$work" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
  ninja -C "$work/build" eqfuse
}
mkdir -p "$out"
shopt -s nullglob
compiled_files=("$trees"/*.compile.json)
[ ${#compiled_files[@]} -gt 0 ] || { echo "no trees in $trees (bench/gpu/prepare.sh)" >&2; exit 1; }
for compiled in "$trees"/*.compile.json; do
  model=$(basename "$compiled" .compile.json)
  case $model in *.*) continue ;; esac  # the specialized and bf16 trees share these graphs
  src=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['model'])" "$compiled")
  "$work/build/tools/eqfuse" optimize "$src" -o "$out/$model.onnx" > /dev/null
  echo "$model: $out/$model.onnx"
done
