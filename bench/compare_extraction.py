"""Compares the graphs two eqfuse builds choose for the same models under one judge: the cost
model's price of the code generated for each (each stage in the form the CUDA printer runs it,
`eqfuse compile`'s predictions.json, cost/stage_costs.h), at batch 1 and 64.

Each build optimizes each model (`eqfuse optimize`, its default pipeline and --device); the
current build then compiles both graphs with --no-optimize and sums its per-stage prices. For
judging a change to the optimizer or to what it prices an e-node at: the "before" build is the
same source at an earlier commit, e.g.

  git worktree add /tmp/eqfuse-at-C C && cmake -S /tmp/eqfuse-at-C -B /tmp/eqfuse-at-C/build \\
      -G Ninja -DCMAKE_BUILD_TYPE=Release && ninja -C /tmp/eqfuse-at-C/build eqfuse
  python3 bench/compare_extraction.py --before /tmp/eqfuse-at-C/build/tools/eqfuse [MODEL...]

Models come from ../shared/models_dynamic (a symbolic batch) where there, else ../shared/models
with their batch made a run-time dim (compile --dynamic-batch) where both graphs allow it, else as
exported (one size: its batch-64 column repeats batch 1). "ops" are the graph's top-level nodes
that make a step of the plan, "launches" the kernels and library calls of its CUDA. The last column is the optimizer's own
figure for the chosen kernels, as each build priced them (its predictions.json's optimizer_ms),
over the judge's, at batch 1.

With --own, each build compiles its own graph and its prices are its own predictions.json: for
judging a change to code generation (what a plan launches) together with the optimizer.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(os.path.dirname(ROOT), "shared")
# The shared models whose weights are inside the model file (an optimized copy of the others
# would point at weights outside its folder).
DEFAULT_MODELS = ["pointwise_chain", "mlp_block", "attention_block", "bert_tiny", "gpt_tiny",
                  "bert_tiny_op13", "vit_tiny", "squeezenet1_1", "mobilenet_v2", "resnet18"]


def source(model):
    for folder, dynamic in (("models_dynamic", False), ("models", True)):
        path = os.path.join(SHARED, folder, model, "model.onnx")
        if os.path.exists(path):
            return path, dynamic
    return None, False


def judged(eqfuse, graph, flags, out, device):
    """{"kernels", "launches", "b1", "b64", "optimizer_b1"} of `graph` compiled by `eqfuse`."""
    done = subprocess.run([eqfuse, "compile", graph, "--no-optimize", "--target", "cuda",
                           "--device", device, "--out", out] + flags,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{graph}: {done.stderr.strip()}")
    with open(os.path.join(out, "predictions.json")) as f:
        kernels = json.load(f)["kernels"]

    def total(key, batch):
        return sum(k[key].get(batch, next(iter(k[key].values()))) for k in kernels) * 1e3

    # What launches: the stages that are not computed where another stores nor written by their
    # producers (codegen::StageForm::Runs::Elsewhere).
    launches = sum(1 for k in kernels for s in k["stages"]
                   if s["form"] not in ("epilogue", "producers"))
    return {"kernels": len(kernels), "launches": launches,
            "b1": total("predicted_ms", "1"), "b64": total("predicted_ms", "64"),
            "optimizer_b1": total("optimizer_ms", "1")}


def judge_both(args, model, graphs, dynamic, scratch):
    """Both graphs judged alike: with a run-time batch where both allow it, else as exported."""
    error = None
    for flags in ([["--dynamic-batch"], []] if dynamic else [[]]):
        try:
            row = {}
            for tag, (binary, graph) in graphs.items():
                out = os.path.join(scratch, f"{model}.{tag}{'.dynamic' if flags else ''}")
                row[tag] = judged(binary if args.own else args.eqfuse, graph, flags, out,
                                  args.device)
                # The optimizer's figure as that build priced it.
                row[tag]["optimizer_b1"] = judged(binary, graph, flags, out + ".own",
                                                  args.device)["optimizer_b1"]
            return row
        except RuntimeError as e:
            error = e
    raise error


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the eqfuse binary to compare against")
    ap.add_argument("--eqfuse", default=os.path.join(ROOT, "build", "tools", "eqfuse"))
    ap.add_argument("--device", default="h200")
    ap.add_argument("--own", action="store_true",
                    help="each build compiles its own graph (judges code generation too)")
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    args = ap.parse_args()
    print("| model | ops before / after | launches | judged us at batch 1: before / after "
          "| at batch 64 | optimizer's figure / judged, batch 1: before -> after |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models:
            src, dynamic = source(model)
            if not src:
                print(f"{model}: not in {SHARED}", file=sys.stderr)
                continue
            graphs = {}
            for tag, binary in (("before", args.before), ("after", args.eqfuse)):
                graph = os.path.join(scratch, f"{model}.{tag}.onnx")
                done = subprocess.run([binary, "optimize", src, "-o", graph, "--device",
                                       args.device], capture_output=True, text=True)
                if done.returncode != 0:
                    print(f"{model}: {tag}: {done.stderr.strip()}", file=sys.stderr)
                    break
                graphs[tag] = (binary, graph)
            if len(graphs) < 2:
                continue
            try:
                row = judge_both(args, model, graphs, dynamic, scratch)
            except RuntimeError as e:
                print(f"{model}: {e}", file=sys.stderr)
                continue
            b, a = row["before"], row["after"]
            print(f"| {model} | {b['kernels']} / {a['kernels']} | {b['launches']} / {a['launches']} "
                  f"| {b['b1']:.1f} / {a['b1']:.1f} ({a['b1'] / b['b1']:.3f}x) "
                  f"| {b['b64']:.0f} / {a['b64']:.0f} ({a['b64'] / b['b64']:.3f}x) "
                  f"| {b['optimizer_b1'] / b['b1']:.2f} -> {a['optimizer_b1'] / a['b1']:.2f} |",
                  flush=True)


if __name__ == "__main__":
    main()
