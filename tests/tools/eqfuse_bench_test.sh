#!/usr/bin/env bash
# eqfuse_bench_test.sh EQFUSE_BENCH SOURCE_DIR WORK_DIR: eqfuse-bench on the bundled models writes
# its table, JSON and SVG; the optimized models launch fewer kernels and their C++ twins match
# the interpreter; bad usage exits 2 with the reason.
set -euo pipefail
bench=$1 src=$2 work=$3
python=/usr/bin/python3
[ -x "$python" ] || python=python3
rm -rf "$work" && mkdir -p "$work"
"$bench" "$src"/examples/models/* --runs 1 --json "$work/r.json" --plot "$work/r.svg" > "$work/table.txt"
cat "$work/table.txt"
grep -q "^mlp " "$work/table.txt"
grep -q "ONNX Runtime columns skipped" "$work/table.txt"
grep -q "GPU columns skipped" "$work/table.txt"
"$python" - "$work" <<'PY'
import json, sys, xml.etree.ElementTree as ET
work = sys.argv[1]
doc = json.load(open(f"{work}/r.json"))
assert [m["model"] for m in doc["models"]] == ["mlp", "pointwise_chain"], doc["models"]
for m in doc["models"]:
    assert m["kernels_after"] < m["kernels_before"], m
    assert m["verified"] == "passed", m
    assert m["twin_match"] is True, m
    assert m["interpreter_ms"] > 0 and m["twin_ms"] > 0, m
    p = m["predicted_ms"]["h200"]
    assert p["after"] < p["before"], m
root = ET.parse(f"{work}/r.svg").getroot()
assert root.tag.endswith("svg")
text = " ".join(root.itertext())
assert "mlp" in text and "pointwise_chain" in text
print("ok")
PY
# The GPU columns join what bench/gpu/run.sh --merge wrote by model name. A made-up file in its
# format (these figures are not measurements) checks the reading, the ratio and the table.
cat > "$work/gpu.json" <<'JSON'
{"parts": [{"part": 1, "device": "Test GPU", "models": [
  {"model": "mlp", "large_batch": 64, "checks": [{"set": 0, "match": true}],
   "b1": {"generic": {"min_ms": 0.05, "graph_replay_ms": 0.04}, "specialized": {"min_ms": 0.045}},
   "b64": "skipped: part deadline"}],
  "torch": [{"model": "mlp", "batch": 1, "mode": "compile", "dtype": "f32", "median_ms": 0.1,
             "first_call_s": 3.5},
            {"model": "mlp", "batch": 1, "mode": "eager", "dtype": "f32", "median_ms": 0.2}]}]}
JSON
"$bench" "$src"/examples/models/* --no-measure --gpu-results "$work/gpu.json" --json "$work/g.json" \
  > "$work/gtable.txt"
cat "$work/gtable.txt"
grep -q "GPU ms" "$work/gtable.txt"
grep -q "measured on Test GPU" "$work/gtable.txt"
"$python" - "$work" <<'PY'
import json, sys
doc = json.load(open(f"{sys.argv[1]}/g.json"))
rows = {m["model"]: m for m in doc["models"]}
b1 = rows["mlp"]["gpu"]["batches"]["1"]
assert rows["mlp"]["gpu"]["device"] == "Test GPU", rows["mlp"]
assert b1["eqfuse_ms"] == 0.05 and b1["compile_ms"] == 0.1 and b1["eager_ms"] == 0.2, b1
assert abs(b1["compile_vs_eqfuse"] - 2.0) < 1e-12 and b1["numerics"] is True, b1
assert b1["compile_first_call_s"] == 3.5 and b1["cudagraphs_ms"] is None, b1
assert rows["mlp"]["gpu"]["batches"]["64"]["eqfuse_ms"] is None
assert "gpu" not in rows["pointwise_chain"], rows["pointwise_chain"]
print("gpu columns: ok")
PY
echo '{"models": []}' > "$work/bad-gpu.json"
set +e
"$bench" "$src/examples/models/mlp" --no-measure --gpu-results "$work/bad-gpu.json" 2> "$work/err3.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "bad-gpu.json" "$work/err3.txt"
set +e
"$bench" "$work/no-such-model.onnx" 2> "$work/err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "no-such-model.onnx" "$work/err.txt"
set +e
"$bench" "$src/examples/models/mlp" --ort "$work/no-ort-here" 2> "$work/err2.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q -- "--ort" "$work/err2.txt"
echo "bad usage: ok"
