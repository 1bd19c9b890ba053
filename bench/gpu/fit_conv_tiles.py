"""Fits the convolution tiles' efficiencies (cost/kernel_forms.h) to a GPU run's per-stage times,
on the CPU machine.

Every convolution stage the run measured (bench/gpu/run.py's stage_ms, batch 1 and the large
batch) that runs in tiles is modelled as the printer runs it: the tile the run picks, its tiles
in whole waves of one per SM, k in whole slices of 16, each slice a tile's multiply-adds at the
SM's FP32 peak divided by that tile size's efficiency, plus a fixed time per stage (launch and
the profiler's events):

  ms = c0 + waves x slices x 2 x tile_m x tile_p x 16 / (FP32 peak / SMs) / efficiency[tile]

fitted by least squares on the relative error. Prints each tile size's efficiency, its ratio to
the 128x64 tile's (conv_tile_relative_efficiency) and the fit's error per batch.

  python3 bench/gpu/fit_conv_tiles.py --graphs G [--results bench/gpu/results]
      [--trees bench/gpu/trees] [--eqfuse build/tools/eqfuse] [--base PROFILE.json]

G holds the optimized graphs of the trees the run measured (bench/gpu/measured_graphs.sh).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TILES = [(128, 64), (64, 64), (32, 64)]


def tile_of(channels, pixels, sms=132):
    """The tile a run picks, and how many there are (cost/kernel_forms.h; kConvFullWave is 132
    whatever the GPU). `channels` per group: every tiled convolution of the shared models has
    one group."""
    cands = ([(128, 64), (32, 64)] if channels > 64 else
             [(64, 64), (32, 64)] if channels > 32 else [(32, 64)])
    for t in cands:
        n = -(-channels // t[0]) * -(-pixels // t[1])
        if n >= sms:
            return t, n
    t = cands[-1]
    return t, -(-channels // t[0]) * -(-pixels // t[1])


def solve(rows, cols):
    """Least squares of sum(x_j * rows[i][j]) = 1 (normal equations, Gaussian elimination)."""
    m = [[sum(r[i] * r[j] for r in rows) for j in range(cols)] for i in range(cols)]
    v = [sum(r[i] for r in rows) for i in range(cols)]
    for i in range(cols):
        for j in range(i + 1, cols):
            f = m[j][i] / m[i][i]
            m[j] = [a - f * b for a, b in zip(m[j], m[i])]
            v[j] -= f * v[i]
    x = [0.0] * cols
    for i in reversed(range(cols)):
        x[i] = (v[i] - sum(m[i][c] * x[c] for c in range(i + 1, cols))) / m[i][i]
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", required=True)
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--trees", default=os.path.join(HERE, "trees"))
    ap.add_argument("--eqfuse", default=os.path.join(ROOT, "build", "tools", "eqfuse"))
    ap.add_argument("--base", default=os.path.join(HERE, "results", "calibrated_profile.json"))
    args = ap.parse_args()
    with open(args.base) as f:
        base = json.load(f)
    sm_peak = base["peak_tflops"]["fp32"] * 1e12 / base["sm_count"]
    measured = {}
    for name in sorted(os.listdir(args.results)):
        if re.fullmatch(r"part\d+\.json", name):
            with open(os.path.join(args.results, name)) as f:
                for m in json.load(f)["models"]:
                    measured[m["model"]] = m
    scratch = tempfile.mkdtemp(prefix="eqfuse-conv-tiles-")
    samples = []
    for model, m in sorted(measured.items()):
        graph = os.path.join(args.graphs, f"{model}.onnx")
        if not os.path.exists(graph):
            continue
        with open(os.path.join(args.trees, f"{model}.compile.json")) as f:
            compiled = json.load(f)
        flags = ["--dynamic-batch"] if "/models/" in compiled["model"] and compiled["dims"] else []
        out = os.path.join(scratch, model)
        subprocess.run([args.eqfuse, "compile", graph, "--no-optimize", "--target", "cuda",
                        "--out", out] + flags, check=True, capture_output=True)
        with open(os.path.join(out, "kernels.cu")) as f:
            text = f.read()
        slices_k = {}  # stage index -> k, for the stages that run in tiles
        for index, body in re.findall(r"__global__ void s(\d+)\((.*?)\n}\n", text, re.S):
            k = re.search(r"k0 < (\d+); k0 \+= 16", body)
            if k:
                slices_k[int(index)] = int(k.group(1))
        with open(os.path.join(out, "plan.json")) as f:
            plan = json.load(f)
        for kernel in plan["kernels"]:
            for stage in kernel["stages"]:
                if stage["kind"] != "conv" or stage["index"] not in slices_k:
                    continue  # one output per thread: not a tile
                dims = stage["type"].split("[")[1].rstrip("]").split(",")
                channels, pixels = int(dims[1]), int(dims[2]) * int(dims[3])
                for batch_key in sorted({"b1", f"b{m.get('large_batch', 64)}"}):
                    run = m.get(batch_key)
                    if not isinstance(run, dict) or "stage_ms" not in run["generic"]:
                        continue
                    batch = run["generic"]["dims"][0] if run["generic"]["dims"] else 1
                    tile, count = tile_of(channels, batch * pixels)
                    waves = math.ceil(count / base["sm_count"])
                    slices = math.ceil(slices_k[stage["index"]] / 16)
                    work_ms = waves * slices * 2 * tile[0] * tile[1] * 16 / sm_peak * 1e3
                    samples.append({"model": model, "batch": batch_key, "tile": tile, "work_ms": work_ms,
                                    "ms": run["generic"]["stage_ms"][stage["index"]]})
    if not samples:
        sys.exit("no tiled convolution stages measured (see --graphs)")
    present = [t for t in TILES if any(s["tile"] == t for s in samples)]
    rows = [[1 / s["ms"]] + [s["work_ms"] / s["ms"] if s["tile"] == t else 0 for t in present]
            for s in samples]
    x = solve(rows, 1 + len(present))
    models = sorted({s["model"] for s in samples})
    print(f"{len(samples)} convolution stages of {', '.join(models)}; fixed time per stage "
          f"{x[0] * 1e3:.2f} us")
    eff = {t: 1 / x[1 + i] for i, t in enumerate(present) if x[1 + i] > 0}
    for t, e in eff.items():
        relative = f", relative to 128x64 {e / eff[TILES[0]]:.2f}" if TILES[0] in eff else ""
        print(f"tile {t[0]}x{t[1]}: efficiency {e:.3f}{relative}")
    for key in sorted({s["batch"] for s in samples}):
        errs = [abs(sum(a * b for a, b in zip(r, x)) * s["ms"] - s["ms"]) / s["ms"]
                for r, s in zip(rows, samples) if s["batch"] == key]
        print(f"{key}: {len(errs)} stages, mean |error| {sum(errs) / len(errs):.0%}")


if __name__ == "__main__":
    main()
