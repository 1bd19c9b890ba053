#!/usr/bin/env bash
# viz_svg_test.sh EQFUSE SOURCE_DIR WORK_DIR: draws the bundled MLP before and after optimize and
# a small e-graph as SVG, checks that each parses as XML with an <svg> root, and that the
# optimized picture names every fused kernel (as `eqfuse info --json` lists them).
set -euo pipefail
eqfuse=$1 src=$2 work=$3
command -v dot >/dev/null || { echo "skipped: Graphviz's dot is not installed"; exit 77; }
python=/usr/bin/python3
[ -x "$python" ] || python=python3
rm -rf "$work" && mkdir -p "$work"
mlp=$src/examples/models/mlp/model.onnx
"$eqfuse" viz "$mlp" --out "$work/before.svg"
"$eqfuse" optimize "$mlp" -o "$work/after.onnx" >/dev/null
"$eqfuse" viz "$work/after.onnx" --out "$work/after.svg"
"$eqfuse" info "$work/after.onnx" --json >"$work/after.json"
printf '(rewrite mul-one (* ?a 1) ?a)\n(rewrite comm (+ ?a ?b) (+ ?b ?a))\n' >"$work/r.rules"
"$eqfuse" saturate --rules "$work/r.rules" --term "(* (+ a b) 1)" --dump "$work/eg.json" >/dev/null
"$eqfuse" viz "$work/eg.json" --out "$work/eg.svg"
"$python" - "$work" <<'PY'
import json, sys, xml.etree.ElementTree as ET
work = sys.argv[1]
def text(name):
    root = ET.parse(f"{work}/{name}").getroot()
    assert root.tag.endswith("svg"), (name, root.tag)
    return " ".join(t for t in root.itertext())
before, after, eg = text("before.svg"), text("after.svg"), text("eg.svg")
kernels = [k["name"] for k in json.load(open(f"{work}/after.json"))["kernels"]]
assert kernels, "the optimized MLP has no fused kernel"
assert len(set(kernels)) == len(kernels), f"kernel names repeat: {kernels}"
for k in kernels:
    assert k + ":" in after, f"after.svg does not name kernel {k}"
assert "LayerNormalization" in before and "Erf" in before, "before.svg lacks the MLP's ops"
assert "e-class" in eg and "(root)" in eg, "eg.svg lacks its e-classes"
print(f"ok: {len(kernels)} kernels named in after.svg")
PY
