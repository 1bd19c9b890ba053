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
set +e
"$bench" "$work/no-such-model.onnx" 2> "$work/err.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "no-such-model.onnx" "$work/err.txt"
set +e
"$bench" "$src/examples/models/mlp" --ort "$work/no-ort-here" 2> "$work/err2.txt"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q -- "--ort" "$work/err2.txt"
echo "bad usage: ok"
