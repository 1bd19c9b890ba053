"""The library's own CUDA path on a GPU machine: `eqfuse run --backend cuda` (NVRTC, the driver
loaded at run time, the host code built with the system compiler) on the models prepare.sh copied
into trees/onnx, as exported and as `eqfuse optimize` leaves them (timed: optimize + the build
is eqfuse's compile time), against their test data, f32 and bf16, first with an empty cache (the
time includes NVRTC) and again from the cache; then `eqfuse calibrate` fits a device profile to this
GPU. Needs an eqfuse binary that runs on that machine.

The first `eqfuse optimize` with an empty cache proves the rule set with Z3 (seconds; cached under
$XDG_CACHE_HOME/eqfuse/proofs, once per rule set and eqfuse version, as an install would): that is
done and timed first, apart ("proofs_s"), so that each model's optimize time is its own.

  python3 bench/gpu/check_backend.py EQFUSE [--trees bench/gpu/trees] [--out bench/gpu/results]
                                            [--quick]   (f32 only, no calibrate)

Writes OUT/backend.json and OUT/calibrated_profile.json; prints one line per run.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

from run import find_cudnn

HERE = os.path.dirname(os.path.abspath(__file__))


def eqfuse_json(cmd, env):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}, time.time() - t0
    try:
        result = json.loads(p.stdout)
    except ValueError:
        result = {"error": (p.stderr or p.stdout)[-800:]}
    if isinstance(result, dict):
        result["rc"] = p.returncode
    else:
        result = {"result": result, "rc": p.returncode}
    return result, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("eqfuse")
    ap.add_argument("--trees", default=os.path.join(HERE, "trees"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--quick", action="store_true", help="f32 only, no calibrate")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ)
    env["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="eqfuse-cache-")  # empty: NVRTC runs
    # The host code links cuDNN where eqfuse finds it: the toolkit's, else PyTorch's wheel.
    cudnn = find_cudnn()
    if cudnn and "CUDNN_ROOT" not in env:
        env["CUDNN_ROOT"] = os.path.dirname(cudnn[0])
    print(f"cuDNN: {cudnn[1] if cudnn else 'not found (convolutions in eqfuse kernels only)'}",
          flush=True)
    runs, calibrate = [], None
    root = os.path.join(args.trees, "onnx")
    first = sorted(os.listdir(root))[0]
    _, proofs_s = optimize(args.eqfuse, os.path.join(root, first, "model.onnx"), env)
    print(f"proving the rule set (the first optimize, {first}, with an empty cache): "
          f"{proofs_s if proofs_s is None else round(proofs_s, 2)} s", flush=True)
    for precision in ("f32",) if args.quick else ("f32", "calibrate", "bf16"):
        if precision == "calibrate":  # between the two, so that a timeout loses bf16 first
            profile = os.path.join(args.out, "calibrated_profile.json")
            p = subprocess.run([args.eqfuse, "calibrate", "--out", profile], capture_output=True,
                               text=True, timeout=240, env=env)
            calibrate = {"rc": p.returncode, "output": (p.stdout + p.stderr)[-4000:]}
            print(f"calibrate: rc {p.returncode}\n{calibrate['output'][-2000:]}", flush=True)
            save(args.out, {"runs": runs, "calibrate": calibrate, "proofs_s": proofs_s})
            continue
        for name in sorted(os.listdir(root)):
            data = os.path.join(root, name, "test_data_set_0")
            # The model as exported, and as `eqfuse optimize` leaves it (fewer, fused stages:
            # what the compile-time comparison is about: optimize + NVRTC + host build).
            optimized, optimize_s = optimize(args.eqfuse, os.path.join(root, name, "model.onnx"),
                                             env)
            for form, model in (("as exported", os.path.join(root, name, "model.onnx")),
                                ("optimized", optimized)):
                if model is None:
                    continue
                for cache in ("empty", "warm"):
                    result, secs = eqfuse_json(
                        [args.eqfuse, "run", model, "--backend", "cuda", "--precision", precision,
                         "--test-data", data, "--json"], env)
                    runs.append({"model": name, "form": form, "precision": precision,
                                 "cache": cache, "wall_s": secs, "result": result,
                                 "optimize_s": optimize_s if form == "optimized" else None})
                    print(f"{name} ({form}) {precision} cache {cache}: rc {result.get('rc')} "
                          f"{json.dumps(result)[:600]}", flush=True)
                    save(args.out, {"runs": runs, "calibrate": calibrate, "proofs_s": proofs_s})


def optimize(eqfuse, model, env):
    """`eqfuse optimize` of `model` into a scratch folder: (path, seconds), or (None, None)."""
    out = os.path.join(tempfile.mkdtemp(prefix="eqfuse-opt-"), "model.onnx")
    t0 = time.time()
    p = subprocess.run([eqfuse, "optimize", model, "-o", out, "--no-verify"], capture_output=True,
                       text=True, timeout=180, env=env)
    if p.returncode != 0:
        print(f"eqfuse optimize failed on {model}:\n{p.stderr[-800:]}", flush=True)
        return None, None
    return out, time.time() - t0


def save(out, doc):
    with open(os.path.join(out, "backend.json"), "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
