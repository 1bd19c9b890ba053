"""Refits a device profile to the kernels eqfuse generated, from a GPU run's measurements, on the
CPU machine (no GPU needed).

`eqfuse calibrate` fits a profile to microbenchmarks (a copy, cuBLAS GEMMs); the GPU benchmark
then measures every stage of the generated kernels (bench/gpu/run.py's per-stage profile), and
`eqfuse compile` prices every stage in the form the printer chose for it (predictions.json,
cost/stage_costs.h; a kernel is the sum of its stages). Where a class is far from its
prediction, this fits the factors that price it to what the kernels did, at the large batch
where each kernel runs long enough for its time to be its work (at batch 1 a profiled stage is
mostly launch and event overhead), from the kernels whose prediction and time are each at
least 3 launches beyond the kernel's own launches and library calls (else they are mostly those
and say nothing of the class's throughput):

  efficiency.convolution  kernels with a Conv stage
  efficiency.contraction  kernels with a MatMul/Gemm stage and no Conv or attention stage
  efficiency.bandwidth    kernels of pointwise and row stages only
                          (each: factor x the median over the class's kernels of
                           (predicted - fixed) / (measured - fixed), kernels of at least 50 us)
  efficiency.attention    attention stages at the large batch measured at 4 launches or more:
                          factor x the median of (predicted - launch) / (measured - launch)
  library_call_us         the median over cuBLAS and cuBLASLt stages (both batches) whose
                          arithmetic and traffic are under half their time of measured minus that
                          roofline: what a library call costs launch by launch
  conv_reread_fraction    direct convolution stages (one output per thread: the depthwise ones)
                          at the large batch measured at 4 launches or more, last, priced with
                          the rest refitted: the median fraction of their input rereads that
                          reaches memory, from each stage's price at the base fraction and at 0
                          (its time is its traffic, linear in the fraction)

Kernels with a direct convolution stage are left out of efficiency.convolution's samples: their
time is that traffic, not the convolution's arithmetic.

The library call's cost and attention come from the base's stage prices; the three factors
after, from prices with that cost, each kernel's launches and calls ("fixed_ms" in
predictions.json) left out of both sides of its ratio instead of one launch.

The launch overhead stays the base's (calibrate measures it without the profiler's events).
Then it prices every model again with the base and with the refitted profile and prints the
error per stage form and per kernel class, and per model against the whole run, as a CUDA-graph
replay and launch by launch (what per-stage prices add up to: a library call's host cost, for
one, is in the launch-by-launch run and not in a replay), before and after. Writes OUT (a profile
file for `--device`) with a "refit" object holding the samples and the errors.

Kernels are matched to the measurements by name, so the graphs priced must be the ones the run
measured: by default each model is optimized again as prepare.sh did, which is right while the
optimizer has not changed since the run; `--graphs DIR` prices DIR/MODEL.onnx instead, the
optimized graphs of the measured trees (`eqfuse optimize` of the commit the trees were written
at), compiled with --no-optimize. A model whose plan has another number of stages than the run
measured is left out, and said so; where the results carry each measured tree's kernels
(run.py's "plan", since stop 32), so is a kernel made of other stages than the run measured, and
where they carry each stage's form (since stop 33), a stage in another form. Results without
"trees_commit" (before stop 32) come from trees written before cuBLASLt's epilogues, and are
priced with --no-cublaslt.

  python3 bench/gpu/refit_profile.py [--results bench/gpu/results] [--trees bench/gpu/trees]
      [--base bench/gpu/results/calibrated_profile.json] [--eqfuse build/tools/eqfuse]
      [--graphs DIR] [--out bench/gpu/results/refitted_profile.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIN_MS = 0.050  # kernels shorter than this are mostly launch overhead


def measured_kernels(results):
    """(model, batch, kernel name) -> (stage kinds, measured ms), (model, batch) -> the
    CUDA-graph replay, model -> the number of stages measured, model -> the measured tree's
    kernels where the results carry them (run.py's "plan"), (model, batch) -> each stage's
    measured ms, and model -> whether its trees printed cuBLASLt's epilogues, from the merged
    results."""
    out, graphs, stages, plans, stage_ms, lt_by_model = {}, {}, {}, {}, {}, {}
    with open(os.path.join(results, "gpu.json")) as f:
        merged = json.load(f)
    for row in merged["cost_model"]["kernels"]:
        out[(row["model"], row["batch"], row["kernel"])] = (row["class"], row["measured_ms"])
    for part in merged["parts"]:
        lt = "trees_commit" in part  # trees since stop 32 print cuBLASLt's epilogues
        for m in part["models"]:
            lt_by_model[m["model"]] = lt
            if m.get("plan"):
                plans[m["model"]] = m["plan"]
            for b in (1, 64):
                r = m.get(f"b{b}")
                if isinstance(r, dict) and "graph_replay_ms" in r["generic"]:
                    graphs[(m["model"], b)] = (r["generic"]["graph_replay_ms"],
                                               r["generic"].get("median_ms"))
                if isinstance(r, dict) and "stage_ms" in r["generic"]:
                    stages[m["model"]] = len(r["generic"]["stage_ms"])
                    stage_ms[(m["model"], b)] = r["generic"]["stage_ms"]
    return out, graphs, stages, plans, stage_ms, lt_by_model


def predictions(eqfuse, trees, model, profile, scratch, graphs, lt):
    """(kernel name -> {batch: predicted ms}, number of stages, kernel name -> its stages,
    stage index -> (form, {batch: predicted ms}), {"fixed_ms": kernel name -> {batch: ms of its
    launches and library calls}, "optimizer_ms": the same of the optimizer's figure, "forms":
    kernel name -> its stages' forms}) for `model`
    priced with `profile`, compiled
    the way prepare.sh compiled its tree (from graphs/MODEL.onnx, not optimized again, where
    `graphs` is given; without cuBLASLt's epilogues unless `lt`)."""
    with open(os.path.join(trees, f"{model}.compile.json")) as f:
        compiled = json.load(f)
    src = compiled["model"]
    if not os.path.isabs(src):
        src = os.path.join(ROOT, src)
    flags = ["--dynamic-batch"] if "/models/" in src and compiled["dims"] else []
    if graphs:
        src = os.path.join(graphs, f"{model}.onnx")
        flags.append("--no-optimize")
    if not lt:
        flags.append("--no-cublaslt")
    out = os.path.join(scratch, model)
    subprocess.run([eqfuse, "compile", src, "--target", "cuda", "--out", out, "--device", profile]
                   + flags, check=True, capture_output=True, text=True)
    with open(os.path.join(out, "plan.json")) as f:
        kernels = json.load(f)["kernels"]
    composition = {k["name"]: [[s["kind"], s["op"], s["type"]] for s in k["stages"]]
                   for k in kernels}
    with open(os.path.join(out, "predictions.json")) as f:
        pred = json.load(f)["kernels"]
    stages = {st["index"]: (st["form"], {int(b): ms for b, ms in st["predicted_ms"].items()})
              for k in pred for st in k.get("stages", [])}
    extra = {key: {k["name"]: {int(b): ms for b, ms in k.get(key, {}).items()} for k in pred}
             for key in ("fixed_ms", "optimizer_ms")}
    extra["forms"] = {k["name"]: {st["form"] for st in k.get("stages", [])} for k in pred}
    return ({k["name"]: {int(b): ms for b, ms in k["predicted_ms"].items()} for k in pred},
            sum(len(k["stages"]) for k in kernels), composition, stages, extra)


def price_all(eqfuse, trees, models, profile, scratch, graphs, measured_stages, plans, lt):
    """model -> kernel name -> {batch: ms}, model -> stage index -> (form, {batch: ms}), and
    model -> predictions()'s fixed and optimizer figures, for
    the models whose plan has the stages the run measured; where the results carry the measured
    tree's kernels, only the kernels made of the same stages, and where they carry the stages'
    forms, only the stages of the same form; `lt`: model -> whether its trees printed
    cuBLASLt's epilogues."""
    priced, priced_stages, extra = {}, {}, {}
    for m in models:
        measured_forms = {i: f for k in plans.get(m, []) for i, f in
                          zip(stage_indices(plans[m], k), k.get("forms") or [])}
        kernels, stages, composition, stage_pred, extra[m] = predictions(
            eqfuse, trees, m, profile, scratch, graphs, lt.get(m, True))
        if measured_stages.get(m, stages) != stages:
            print(f"{m}: left out, its plan has {stages} stages and the run measured "
                  f"{measured_stages[m]} (another optimizer; see --graphs)", file=sys.stderr)
            continue
        if m in plans:
            same = {k["name"] for k in plans[m] if composition.get(k["name"]) == k["stages"]}
            if len(same) < len(kernels):
                print(f"{m}: {len(kernels) - len(same)} of {len(kernels)} kernels left out, made "
                      f"of other stages than the run measured", file=sys.stderr)
            # Stages are matched to the measured ones by index, which holds only while every
            # kernel is made of the same stages: else no stage of the model is compared.
            if len(same) < len(kernels):
                stage_pred = {}
            kernels = {k: v for k, v in kernels.items() if k in same}
        priced[m] = kernels
        priced_stages[m] = {i: p for i, p in stage_pred.items()
                            if measured_forms.get(i) in (None, p[0])}
    return priced, priced_stages, extra


def stage_indices(plan, kernel):
    """The stage indices of `kernel` in a run.py plan (its kernels' stages in order)."""
    first = 0
    for k in plan:
        if k is kernel:
            return range(first, first + len(k["stages"]))
        first += len(k["stages"])
    return range(0)


def stage_errors(stage_ms, priced_stages):
    """Mean |error| per stage form (both batches), over stages measured and predicted above
    zero (an epilogue another stage computes is measured as nothing)."""
    by_form = {}
    for (model, batch), times in stage_ms.items():
        for i, (form, ms) in priced_stages.get(model, {}).items():
            p = ms.get(batch)
            if p and i < len(times) and times[i] > 0:
                by_form.setdefault(form, []).append(abs(p - times[i]) / times[i])
    return {f: (sum(e) / len(e), len(e)) for f, e in sorted(by_form.items())}


def errors(measured, graphs, priced):
    """Mean |error| per kernel class (both batches), and per model against the graph replay."""
    by_class = {}
    for (model, batch, kernel), (cls, ms) in measured.items():
        p = priced.get(model, {}).get(kernel, {}).get(batch)
        if p is not None and ms > 0:
            by_class.setdefault(cls, []).append(abs(p - ms) / ms)
    per_model = {}
    for (model, batch), (replay, launches) in graphs.items():
        if model in priced:
            total = sum(k.get(batch, 0) for k in priced[model].values())
            per_model[f"{model} b{batch}"] = (
                (total - replay) / replay,
                (total - launches) / launches if launches else float("nan"))
    return ({c: sum(e) / len(e) for c, e in sorted(by_class.items())}, per_model)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--trees", default=os.path.join(HERE, "trees"))
    ap.add_argument("--base", default=os.path.join(HERE, "results", "calibrated_profile.json"))
    ap.add_argument("--eqfuse", default=os.path.join(ROOT, "build", "tools", "eqfuse"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "refitted_profile.json"))
    ap.add_argument("--graphs", help="optimized graphs of the measured trees, DIR/MODEL.onnx")
    args = ap.parse_args()
    measured, graphs, measured_stages, plans, stage_ms, lt = measured_kernels(args.results)
    models = sorted({m for m, _, _ in measured}
                    & {m for m in os.listdir(args.trees) if not os.path.isfile(
                        os.path.join(args.trees, m))})
    with open(args.base) as f:
        base = json.load(f)
    base.pop("calibration", None)
    launch_ms = base["launch_overhead_us"] * 1e-3
    scratch = tempfile.mkdtemp(prefix="eqfuse-refit-")
    base_file = os.path.join(scratch, "base.json")
    with open(base_file, "w") as f:
        json.dump(base, f)
    print(f"pricing {len(models)} models with the base profile", file=sys.stderr)
    before, before_stages, _ = price_all(args.eqfuse, args.trees, models, base_file, scratch,
                                         args.graphs, measured_stages, plans, lt)

    # Attention from its stages at the large batch that are mostly work (at least 4 launches);
    # a library call's fixed cost from the library stages whose arithmetic and traffic are under
    # half their time, at both batches: the median of measured minus that roofline.
    call_ms = base.get("library_call_us", base["launch_overhead_us"]) * 1e-3
    samples = {"convolution": [], "contraction": [], "bandwidth": [], "attention": [],
               "conv_reread": []}
    calls = []
    for (model, batch), times in stage_ms.items():
        for i, (form, ms) in before_stages.get(model, {}).items():
            p = ms.get(batch)
            if p is None or i >= len(times):
                continue
            row = {"model": model, "batch": batch, "stage": i, "form": form,
                   "measured_ms": times[i], "predicted_ms": p}
            if form.startswith("attention") and batch == 64 and times[i] >= 4 * launch_ms:
                row["ratio"] = (p - launch_ms) / max(times[i] - launch_ms, 1e-9)
                samples["attention"].append(row)
            elif form in ("cublas", "cublaslt") and p - call_ms < times[i] / 2:
                row["call_ms"] = times[i] - (p - call_ms)
                calls.append(row)
    refit = dict(base)
    fitted = {}
    if calls:
        call_us = statistics.median(c["call_ms"] for c in calls) * 1e3
        fitted["library_call_us"] = {"stages": len(calls), "before": call_ms * 1e3,
                                     "after": call_us}
        refit["library_call_us"] = call_us
    samples["library_call"] = calls

    # The factors, from the large batch's long kernels, priced with the library call's cost
    # fitted: each kernel's launches and calls (its "fixed_ms") left out of both sides.
    called_file = os.path.join(scratch, "library_call.json")
    with open(called_file, "w") as f:
        json.dump(refit, f, indent=1)
    print(f"pricing {len(models)} models with the library call's cost", file=sys.stderr)
    called, _, extra = price_all(args.eqfuse, args.trees, models, called_file, scratch,
                                 args.graphs, measured_stages, plans, lt)

    def kind_of(cls):
        kinds = set(cls.split("+"))
        if "conv" in kinds:
            return "convolution"
        if "attention" in kinds:
            return None  # fitted from its stages above
        if kinds & {"matmul", "gemm"}:
            return "contraction"
        return "bandwidth"

    for (model, batch, kernel), (cls, ms) in measured.items():
        p = called.get(model, {}).get(kernel, {}).get(batch)
        kind = kind_of(cls)
        if batch != 64 or p is None or kind is None or ms < MIN_MS:
            continue
        # A convolution one output per thread is its traffic, fitted below, not arithmetic.
        forms = extra.get(model, {}).get("forms", {}).get(kernel, set())
        if kind == "convolution" and any(f.startswith("conv direct") for f in forms):
            continue
        f = extra.get(model, {}).get("fixed_ms", {}).get(kernel, {}).get(batch, launch_ms)
        # A kernel whose prediction or time is mostly launches and calls says nothing of its
        # class's throughput.
        if p - f < 3 * launch_ms or ms - f < 3 * launch_ms:
            continue
        samples[kind].append({"model": model, "kernel": kernel, "class": cls, "measured_ms": ms,
                              "predicted_ms": p, "fixed_ms": f,
                              "ratio": (p - f) / max(ms - f, 1e-9)})
    eff = dict(base["efficiency"])
    eff.setdefault("convolution", eff["contraction"])
    eff.setdefault("attention", eff["contraction"])
    for kind, rows in samples.items():
        if rows and kind not in ("library_call", "conv_reread"):
            r = statistics.median(s["ratio"] for s in rows)
            fitted[kind] = {"kernels": len(rows), "median_ratio": r,
                            "before": eff[kind], "after": min(1.0, eff[kind] * r)}
            eff[kind] = fitted[kind]["after"]
    refit["name"] = base["name"] + "-refit"
    refit["description"] = base["description"] + ", refitted to eqfuse's generated kernels"
    refit["efficiency"] = eff
    refit["sources"] = base.get("sources", []) + [
        "bench/gpu/refit_profile.py: efficiency.convolution, .contraction, .bandwidth and "
        ".attention and library_call_us fitted to the per-stage times of eqfuse's generated "
        "kernels (bench/gpu/results)"]
    with open(args.out, "w") as f:
        json.dump(refit, f, indent=1)

    # The fraction of a direct convolution's rereads that reach memory, last, from its stages at
    # the large batch measured at 4 launches or more, priced with everything else refitted: at
    # its base value and at 0 the stage's time is p_base and p_0, linear in the fraction between
    # (its traffic; a direct convolution is memory-bound), so each stage's fraction is
    # base x (measured - p_0) / (p_base - p_0); the median, within [0, 1].
    reread_base = base.get("conv_reread_fraction", 1.0)
    print(f"pricing {len(models)} models with the refitted factors", file=sys.stderr)
    _, full_stages, _ = price_all(args.eqfuse, args.trees, models, args.out, scratch, args.graphs,
                                  measured_stages, plans, lt)
    no_reread_file = os.path.join(scratch, "no_reread.json")
    with open(no_reread_file, "w") as f:
        json.dump(dict(refit, conv_reread_fraction=0), f, indent=1)
    print(f"pricing {len(models)} models with no rereads", file=sys.stderr)
    _, no_reread_stages, _ = price_all(args.eqfuse, args.trees, models, no_reread_file, scratch,
                                       args.graphs, measured_stages, plans, lt)
    for (model, batch), times in stage_ms.items():
        for i, (form, ms) in full_stages.get(model, {}).items():
            p, p0 = ms.get(batch), no_reread_stages.get(model, {}).get(i, (None, {}))[1].get(batch)
            if (not form.startswith("conv direct") or batch != 64 or p is None or p0 is None
                    or i >= len(times) or times[i] < 4 * launch_ms or p - p0 < 1e-6):
                continue
            samples["conv_reread"].append({
                "model": model, "batch": batch, "stage": i, "measured_ms": times[i],
                "predicted_ms": p, "no_reread_ms": p0,
                "fraction": reread_base * (times[i] - p0) / (p - p0)})
    if samples["conv_reread"]:
        r = min(1.0, max(0.0, statistics.median(s["fraction"] for s in samples["conv_reread"])))
        fitted["conv_reread_fraction"] = {"stages": len(samples["conv_reread"]),
                                          "before": reread_base, "after": r}
        refit["conv_reread_fraction"] = r
        refit["sources"][-1] = refit["sources"][-1].replace(
            "and library_call_us", "library_call_us and conv_reread_fraction")
        with open(args.out, "w") as f:
            json.dump(refit, f, indent=1)
    print(f"pricing {len(models)} models with the refitted profile", file=sys.stderr)
    after, after_stages, after_extra = price_all(args.eqfuse, args.trees, models, args.out, scratch,
                                       args.graphs, measured_stages, plans, lt)

    b_class, b_model = errors(measured, graphs, before)
    a_class, a_model = errors(measured, graphs, after)
    # The optimizer's own figure of the same kernels (each kernel's body planned alone and priced
    # by its stages), refitted, against the run launch by launch.
    opt = {m: {k: after_extra[m]["optimizer_ms"].get(k, {}) for k in after[m]} for m in after}
    _, o_model = errors(measured, graphs, opt)
    b_form, a_form = stage_errors(stage_ms, before_stages), stage_errors(stage_ms, after_stages)
    refit["refit"] = {"fitted": fitted, "samples": samples,
                      "mean_abs_error_by_class": {"before": b_class, "after": a_class},
                      "mean_abs_error_by_stage_form": {"before": b_form, "after": a_form},
                      "model_error_vs_graph_replay": {"before": b_model, "after": a_model},
                      "optimizer_figure_error": o_model}
    with open(args.out, "w") as f:
        json.dump(refit, f, indent=1)
    for kind, v in fitted.items():
        if kind == "library_call_us":
            print(f"library_call_us: {v['before']:.1f} -> {v['after']:.1f} "
                  f"({v['stages']} library stages)")
            continue
        if kind == "conv_reread_fraction":
            print(f"conv_reread_fraction: {v['before']:.3f} -> {v['after']:.3f} "
                  f"({v['stages']} direct convolution stages)")
            continue
        what = "stages" if kind == "attention" else "kernels"
        print(f"efficiency.{kind}: {v['before']:.3f} -> {v['after']:.3f} "
              f"({v['kernels']} {what}, median ratio {v['median_ratio']:.3f})")
    print("\n| stage form | stages | mean abs error, base | refitted |\n|---|---|---|---|")
    for f in b_form:
        print(f"| {f} | {b_form[f][1]} | {b_form[f][0]:.0%} | "
              f"{a_form.get(f, (float('nan'), 0))[0]:.0%} |")
    print("\n| kernel class | kernels' mean abs error, base | refitted |\n|---|---|---|")
    for c in b_class:
        print(f"| {c} | {b_class[c]:.0%} | {a_class.get(c, float('nan')):.0%} |")
    print("\n| model, batch | whole run vs CUDA-graph replay, base | refitted | vs launch by "
          "launch, base | refitted | the optimizer's figure, refitted, vs launch by launch |"
          "\n|---|---|---|---|---|---|")
    nan = (float("nan"), float("nan"))
    for m in b_model:
        print(f"| {m} | {b_model[m][0]:+.0%} | {a_model.get(m, nan)[0]:+.0%} | "
              f"{b_model[m][1]:+.0%} | {a_model.get(m, nan)[1]:+.0%} | "
              f"{o_model.get(m, nan)[1]:+.0%} |")


if __name__ == "__main__":
    main()
