#!/usr/bin/env bash
# On the CPU machine: writes what the GPU benchmark (bench/gpu/run.sh) builds and runs, into
# bench/gpu/trees (ignored by git; send it with the repository). For each model: the generic
# CUDA tree (dims left run-time), trees specialized at batch 1 and at the large batch (--dim,
# weights shared with the generic tree), the test data, and where the weights do not travel,
# outputs of the C++ twin at the bench's seeded weights and inputs to check the GPU against;
# for the part-1 models also the --precision bf16 tree, always at seeded weights.
#   bench/gpu/prepare.sh [EQFUSE] [SHARED]      (defaults build/tools/eqfuse, ../shared)
set -euo pipefail
cd "$(dirname "$0")/../.."
eqfuse=${1:-build/tools/eqfuse}
shared=${2:-../shared}
out=bench/gpu/trees
rm -rf "$out"
mkdir -p "$out"
cp "$shared/models/torch_defs.py" "$out/"

# model  large-batch  part
models="pointwise_chain:4096:1 mlp_block:64:1 attention_block:64:1 bert_tiny:64:1 gpt_tiny:64:1
resnet18:64:1 bert_tiny_op13:64:4 vit_tiny:64:4 squeezenet1_1:64:4 mobilenet_v2:64:4"
carry_weights_limit=$((4 * 1024 * 1024))  # larger weights are seeded on the GPU instead
: > "$out/models.txt"
# The commit the trees come from, which the results carry (refit_profile.py prices the graphs of
# the trees a run measured: bench/gpu/measured_graphs.sh).
if commit=$(git rev-parse HEAD 2>/dev/null); then
  [ -z "$(git status --porcelain 2>/dev/null)" ] ||
    commit="$commit with uncommitted changes"
else
  commit=unknown
fi
printf '%s' "$commit" > "$out/commit"

# The C++ twin of a model (compile flags given) run once at the bench's seeded weights and
# inputs (seed 1, at $TWIN_DIM, default batch=1), its inputs and outputs written as a test-data
# set into DIR.
#   seeded_twin_outputs SRC DIR FLAGS...
seeded_twin_outputs() {
  local src=$1 dir=$2
  shift 2
  local twin
  twin=$(mktemp -d "$out/twin.XXXXXX")
  "$eqfuse" compile "$src/model.onnx" --target cpu --out "$twin" "$@" >/dev/null
  rm -f "$twin/weights.bin"
  c++ -std=c++17 -O3 -fopenmp -fPIC -shared -o "$twin/libeqfuse_model.so" "$twin/kernels.cpp"
  c++ -std=c++17 -O2 -o "$twin/bench" "$twin/bench.cpp" -L"$twin" -leqfuse_model \
    -Wl,-rpath,'$ORIGIN'
  mkdir -p "$dir"
  dir=$(realpath "$dir")
  (cd "$twin" && ./bench --dim "${TWIN_DIM:-batch=1}" --seed 1 --runs 1 --write-outputs "$dir" >/dev/null)
  rm -rf "$twin"
}
for entry in $models; do
  IFS=: read -r m large part <<< "$entry"
  flags=()
  fixed_batch=0
  if [ -f "$shared/models_dynamic/$m/model.onnx" ]; then
    src=$shared/models_dynamic/$m
  else
    src=$shared/models/$m
    flags=(--dynamic-batch)
  fi
  echo "== $m (from $src, large batch $large)"
  if ! "$eqfuse" compile "$src/model.onnx" --target cuda --out "$out/$m" "${flags[@]}" --json \
    > "$out/$m.compile.json"; then
    # A model that fixes its batch (vit_tiny's Reshape) is benchmarked at its exported batch.
    if [ ${#flags[@]} -gt 0 ] &&
      "$eqfuse" compile "$src/model.onnx" --target cuda --out "$out/$m" --json \
        > "$out/$m.compile.json"; then
      echo "   its batch is fixed: benchmarked at the exported batch only"
      flags=()
      large=1
      fixed_batch=1
    else
      echo "   skipped: eqfuse compile failed on $m"
      rm -rf "$out/$m" "$out/$m.compile.json"
      continue
    fi
  fi
  for b in 1 "$large"; do
    [ "$fixed_batch" = 1 ] && break  # no run-time dim to specialize
    "$eqfuse" compile "$src/model.onnx" --target cuda --out "$out/$m.b$b" "${flags[@]}" \
      --dim "batch=$b" --json > "$out/$m.b$b.compile.json" ||
      echo "   skipped: the build specialized at batch $b failed"
    rm -f "$out/$m.b$b/weights.bin"
  done
  for set in "$src"/test_data_set_*; do cp -r "$set" "$out/$m/"; done
  if [ -f "$out/$m/weights.bin" ] && [ "$(stat -c %s "$out/$m/weights.bin")" -gt "$carry_weights_limit" ]; then
    # Check the GPU at seeded weights against the C++ twin at the same seed and inputs.
    rm -f "$out/$m/weights.bin"
    rm -rf "$out/$m"/test_data_set_*
    seeded_twin_outputs "$src" "$out/$m/seeded_set_0" "${flags[@]}"
  fi
  if [ "$part" = 1 ]; then
    # The --precision bf16 tree (part 2): seeded weights, checked against the bf16 twin's
    # outputs at the same seed and inputs.
    "$eqfuse" compile "$src/model.onnx" --target cuda --precision bf16 --out "$out/$m.bf16" \
      "${flags[@]}" --json > "$out/$m.bf16.compile.json" || echo "   skipped: the bf16 build failed"
    if [ -d "$out/$m.bf16" ]; then
      rm -f "$out/$m.bf16/weights.bin"
      seeded_twin_outputs "$src" "$out/$m.bf16/seeded_set_0" "${flags[@]}" --precision bf16
    fi
  fi
  echo "$m $large $part" >> "$out/models.txt"
done

echo "== models for the library's CUDA backend (bench/gpu/check_backend.py)"
for m in pointwise_chain mlp_block attention_block bert_tiny gpt_tiny; do
  mkdir -p "$out/onnx/$m"
  cp "$shared/models_dynamic/$m/model.onnx" "$out/onnx/$m/"
  cp -r "$shared/models_dynamic/$m/test_data_set_0" "$out/onnx/$m/"
done

echo "== micro-models for bandwidth"
build/bench/gpu_micro_models "$out/micro-src"
mkdir -p "$out/micro"
# Each is checked at seeded weights and a small awkward size (a partial group of 4, rows not a
# multiple of the warps in a block) against the C++ twin.
for entry in pointwise_silu:1003 pointwise_add3:1003 softmax_rows:37 layernorm_rows:37 \
  softmax_long_rows:5 reduce_rows:37 reduce_long_rows:5; do
  m=${entry%%:*}
  "$eqfuse" compile "$out/micro-src/$m/model.onnx" --target cuda --out "$out/micro/$m" --json \
    > "$out/micro/$m.compile.json"
  rm -f "$out/micro/$m/weights.bin"
  TWIN_DIM="n=${entry##*:}" seeded_twin_outputs "$out/micro-src/$m" "$out/micro/$m/seeded_set_0"
done
rm -rf "$out/micro-src"
cp bench/gpu/copy_bandwidth.cu "$out/"
du -sh "$out"
