"""The GPU benchmark: eqfuse's generated CUDA against PyTorch eager, torch.compile and CUDA graphs.

Runs on a GPU machine that has nvcc and PyTorch (with Triton) but nothing of eqfuse: it builds
the trees bench/gpu/prepare.sh wrote on the CPU machine, checks them against test data, and
times them beside PyTorch on the same shapes. In parts of at most ~5 minutes each (a part stops
starting new work at its deadline and records what it skipped); each part writes
results/partN.json, and `--merge` joins the parts into results/gpu.json and one table.

  part 1: the six target models, f32 (TF32 off on both sides), batch 1 and the large batch:
          nvcc build time, numerics, eqfuse generic and --dim-specialized builds (launch by
          launch and as a CUDA-graph replay), per-stage times, PyTorch eager / CUDA graphs /
          torch.compile (first-call time with empty Inductor and Triton caches)
  part 2: the same models in bf16: eqfuse's --precision bf16 build (generic dims; checked at
          seeded weights against the bf16 C++ twin, timed at batch 1 and the large batch) and
          PyTorch (eager, torch.compile default and max-autotune-no-cudagraphs at the large batch)
  part 3: bandwidth of pointwise and row-reduction kernels on 256 MiB tensors as a fraction of
          a device-to-device copy; a batch sweep 1..64 of one eqfuse build against
          torch.compile's recompiles
  part 4: the other models, f32, as part 1

Each part first builds every tree with nvcc at once (one per core; a tree an earlier part built
is not built again), with cuDNN where it finds it (find_cudnn: then each convolution times cuDNN
against its own kernels at its first run and keeps the faster; the choices and both times are
recorded, and models with convolutions are timed again with their own kernels only), runs
eqfuse's benches, then PyTorch's jobs in one process (torch_bench.py). Times on both sides are
medians of CUDA-event-timed runs.

  python3 bench/gpu/run.py --part N [--trees bench/gpu/trees] [--out bench/gpu/results]
  python3 bench/gpu/run.py --merge
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PART_SECONDS = int(os.environ.get("EQFUSE_PART_SECONDS", "280"))


def sh(cmd, cwd=None, timeout=240, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr, time.time() - t0


BUILT = {}  # tree -> seconds its nvcc build took (None: it failed)


def find_cudnn():
    """cuDNN's include directory and library: $CUDNN_ROOT, the CUDA toolkit's, or PyTorch's wheel
    (nvidia-cudnn-*); None where there is none (convolutions then run in eqfuse's kernels)."""
    roots = [os.environ.get("CUDNN_ROOT", ""), "/usr/local/cuda"]
    try:
        import nvidia.cudnn  # the wheel PyTorch depends on
        roots += list(nvidia.cudnn.__path__)
    except ImportError:
        pass
    for root in filter(None, roots):
        for lib_dir in ("lib", "lib64"):
            for name in ("libcudnn.so", "libcudnn.so.9"):
                lib = os.path.join(root, lib_dir, name)
                if os.path.exists(os.path.join(root, "include", "cudnn.h")) and os.path.exists(lib):
                    return os.path.join(root, "include"), lib
    return None


CUDNN = find_cudnn()


def build_one(nvcc, arch, tree):
    """nvcc builds the tree's library and bench; returns seconds of the kernels' build or None.
    A tree an earlier part built (for the same arch) is not built again."""
    record = os.path.join(tree, f"nvcc_seconds.{arch}")
    if os.path.exists(record) and os.path.exists(os.path.join(tree, "bench")):
        with open(record) as f:
            return float(f.read())
    cudnn = []
    if CUDNN:  # each convolution then takes the faster of cuDNN and its kernels (kernels.cu)
        cudnn = ["-DEQFUSE_CUDNN", f"-I{CUDNN[0]}", CUDNN[1], "-Xlinker", "-rpath", "-Xlinker",
                 os.path.dirname(CUDNN[1])]
    rc, _, err, secs = sh([nvcc, "-O3", "-std=c++17", f"-arch={arch}", "-shared", "-Xcompiler",
                           "-fPIC", "-o", "libeqfuse_model.so", "kernels.cu", "-lcublas", "-lcublasLt"] + cudnn,
                          cwd=tree)
    if rc != 0:
        print(f"nvcc failed in {tree}:\n{err[-2000:]}", file=sys.stderr)
        return None
    rc, _, err, _ = sh([nvcc, "-O2", "-std=c++17", f"-arch={arch}", "-o", "bench", "bench.cu",
                        "-L.", "-leqfuse_model", "-Xlinker", "-rpath", "-Xlinker", "$ORIGIN"],
                       cwd=tree)
    if rc != 0:
        print(f"nvcc failed on bench in {tree}:\n{err[-2000:]}", file=sys.stderr)
        return None
    with open(record, "w") as f:
        f.write(str(secs))
    return secs


def build_all(nvcc, arch, trees):
    """Builds every tree under `trees` at once, one nvcc per core (the seconds recorded per tree
    are those of a build sharing the machine with the others)."""
    dirs = [d for d, _, files in os.walk(trees) if "kernels.cu" in files and d not in BUILT]
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        for d, secs in zip(dirs, pool.map(lambda d: build_one(nvcc, arch, d), dirs)):
            BUILT[d] = secs
    print(f"== nvcc built {sum(s is not None for s in BUILT.values())} of {len(dirs)} trees in "
          f"{time.time() - t0:.1f} s", flush=True)


def build(nvcc, arch, tree):
    if tree not in BUILT:
        BUILT[tree] = build_one(nvcc, arch, tree)
    return BUILT[tree]


def bench(tree, args, conv=None, extra_env=None):
    """Runs the tree's bench; `conv` forces the convolutions' form (EQFUSE_CONV)."""
    env = dict(os.environ, EQFUSE_CONV_REPORT="1", **(extra_env or {}))
    if conv:
        env["EQFUSE_CONV"] = conv
    rc, out, err, _ = sh(["./bench"] + args, cwd=tree, env=env)
    try:
        j = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (err or out)[-500:], "rc": rc}
    j["rc"] = rc
    # Each convolution's choice between cuDNN and eqfuse's kernels, with both times (and any
    # cuDNN form its check against the kernels refused).
    choices = [line for line in err.splitlines() if line.startswith("eqfuse: stage")]
    if choices:
        j["conv_choices"] = choices
    lt_failures = [line for line in err.splitlines() if line.startswith("eqfuse: cuBLASLt")]
    if lt_failures:
        j["cublaslt_failures"] = lt_failures
    return j


STARTUP = []  # what each PyTorch process paid before its first job (torch_bench.py)


def torch_jobs(trees, jobs, deadline):
    """PyTorch's measurements of `jobs` (torch_bench.py, one process with empty Inductor and
    Triton caches), stopped at the deadline; the jobs it did not reach come back as skipped."""
    if not jobs:
        return [], []
    env = dict(os.environ)
    cache = tempfile.mkdtemp(prefix="eqfuse-torch-cache-")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
    env["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    env["PYTHONUNBUFFERED"] = "1"
    job_file = os.path.join(cache, "jobs.json")
    with open(job_file, "w") as f:
        json.dump(jobs, f)
    results = []
    p = subprocess.Popen([sys.executable, os.path.join(HERE, "torch_bench.py"), trees, job_file],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    timer = threading.Timer(max(1.0, deadline - time.time()), p.kill)
    timer.start()
    try:
        for line in p.stdout:
            if line.startswith("{\"startup\""):
                STARTUP.append(json.loads(line)["startup"])
            elif line.startswith("{"):
                results.append(json.loads(line))
                print(f"   torch {results[-1].get('model')} {results[-1].get('mode')} "
                      f"b{results[-1].get('batch')} {results[-1].get('dtype')}: "
                      f"{results[-1].get('median_ms', results[-1].get('error'))}", flush=True)
        p.wait()
        if p.returncode not in (0, -9) and len(results) < len(jobs):
            err = p.stderr.read()[-1500:]
            print(f"torch_bench.py exited {p.returncode}:\n{err}", file=sys.stderr)
            if not results:
                results.append({"error": err})
    finally:
        timer.cancel()
        shutil.rmtree(cache, ignore_errors=True)
    done = len([r for r in results if "model" in r])
    skipped = [f"torch {j['model']} {j['mode']} b{j.get('batch')} {j.get('dtype')}"
               for j in jobs[done:]]
    return results, skipped


def models(trees, part):
    out = []
    with open(os.path.join(trees, "models.txt")) as f:
        for line in f:
            name, large, p = line.split()
            if int(p) == part or (part == 2 and int(p) == 1):
                out.append((name, int(large)))
    return out


def eqfuse_model(trees, nvcc, arch, name, large, record, deadline):
    tree = os.path.join(trees, name)
    r = {"model": name, "large_batch": large, "plan": plan_summary(tree)}
    r["nvcc_s"] = build(nvcc, arch, tree)
    if r["nvcc_s"] is None:
        record(r)
        return
    checks = []
    for d in sorted(os.listdir(tree)):
        path = os.path.join(tree, d)
        if d.startswith("test_data_set_"):
            checks.append(bench(tree, ["--test-data", path, "--runs", "1"]))
        elif d.startswith("seeded_set_"):
            checks.append(bench(tree, ["--test-data", path, "--seed", "1", "--runs", "1"]))
    r["checks"] = [{"set": i, "match": c.get("match"), "detail": c.get("checked", c.get("error"))}
                   for i, c in enumerate(checks)]
    print(f"   numerics: {r['checks']}", flush=True)
    weights = ["--weights", os.path.join("..", name, "weights.bin")]
    for b in sorted({1, large}):
        if time.time() > deadline:
            r[f"b{b}"] = "skipped: part deadline"
            continue
        gen = bench(tree, batch_dim(tree, b) + ["--runs", "50", "--seed", "2"])
        spec_tree = os.path.join(trees, f"{name}.b{b}")
        spec = {"error": "no specialized tree"}
        if os.path.isdir(spec_tree) and build(nvcc, arch, spec_tree) is not None:
            spec = bench(spec_tree, weights + ["--runs", "50", "--seed", "2"])
        r[f"b{b}"] = {"generic": gen, "specialized": spec}
        print(f"   b{b}: generic {typical(gen)} ms (graph {gen.get('graph_replay_ms')}), "
              f"specialized {typical(spec)} ms {gen.get('error', '')}", flush=True)
        if b == large and "cuBLASLt" in open(os.path.join(tree, "kernels.cu")).read() \
                and time.time() < deadline:
            # The same build with every product's epilogue in its own kernel, for the ratio.
            plain = bench(tree, batch_dim(tree, b) + ["--runs", "50", "--seed", "2"],
                          extra_env={"EQFUSE_CUBLASLT": "0"})
            r[f"b{b}"]["cublas_only"] = plain
            print(f"   b{b}: epilogues in kernels (EQFUSE_CUBLASLT=0) {typical(plain)} ms "
                  f"(graph {plain.get('graph_replay_ms')})", flush=True)
        if CUDNN and gen.get("conv_choices") and time.time() < deadline:
            # The same build with every convolution in eqfuse's own kernels, for the ratio.
            own = bench(tree, batch_dim(tree, b) + ["--runs", "50", "--seed", "2"], "kernels")
            r[f"b{b}"]["conv_kernels_only"] = own
            print(f"   b{b}: convolutions in eqfuse kernels only {typical(own)} ms", flush=True)
    record(r)


def plan_summary(tree):
    """Each kernel of the tree and its stages (kind, op, type), in stage order, with each stage's
    form (how the CUDA code ran it): what the times were measured on, so that refit_profile.py
    can check that it prices the same kernels in the same forms."""
    try:
        with open(os.path.join(tree, "plan.json")) as f:
            plan = json.load(f)
    except (OSError, ValueError):
        return None
    return [{"name": k["name"], "stages": [[s["kind"], s["op"], s["type"]] for s in k["stages"]],
             "forms": [s.get("form") for s in k["stages"]]}
            for k in plan.get("kernels", [])]


def batch_dim(tree, b):
    """`--dim batch=B` where the tree has that run-time dim (a model with a fixed batch has none)."""
    try:
        with open(os.path.join(tree, "plan.json")) as f:
            dims = json.load(f).get("dims", [])
    except (OSError, ValueError):
        dims = ["batch"]
    return ["--dim", f"batch={b}"] if "batch" in dims else []


def eqfuse_bf16(trees, nvcc, arch, name, large, record, deadline):
    """The --precision bf16 tree: numerics at seeded weights (the bf16 twin's outputs, at the
    tree's own tolerance) and the generic build's time at batch 1 and the large batch."""
    tree = os.path.join(trees, f"{name}.bf16")
    r = {"model": name, "large_batch": large, "dtype": "bf16"}
    if not os.path.isdir(tree):
        r["error"] = "no bf16 tree"
        record(r)
        return
    r["nvcc_s"] = build(nvcc, arch, tree)
    if r["nvcc_s"] is None:
        record(r)
        return
    seeded = os.path.join(tree, "seeded_set_0")
    if os.path.isdir(seeded):
        c = bench(tree, ["--test-data", seeded, "--seed", "1", "--runs", "1"])
        r["checks"] = [{"set": 0, "match": c.get("match"), "detail": c.get("checked", c.get("error"))}]
    for b in (1, large):
        if time.time() > deadline:
            r[f"b{b}"] = "skipped: part deadline"
            continue
        r[f"b{b}"] = {"generic": bench(tree, batch_dim(tree, b) + ["--runs", "50", "--seed", "2"])}
        print(f"   bf16 b{b}: {typical(r[f'b{b}']['generic'])} ms", flush=True)
    record(r)


def run_part(args):
    deadline = time.time() + PART_SECONDS
    os.makedirs(args.out, exist_ok=True)
    build_all(args.nvcc, args.arch, args.trees)
    print(f"== cuDNN: {CUDNN[1] if CUDNN else 'not found (convolutions in eqfuse kernels only)'}",
          flush=True)
    commit_file = os.path.join(args.trees, "commit")
    commit = "unknown"
    if os.path.exists(commit_file):
        with open(commit_file) as f:
            commit = f.read().strip()
    results = {"part": args.part, "device": device_name(), "cudnn": CUDNN and CUDNN[1],
               "trees_commit": commit,
               "models": [], "models_bf16": [],
               "torch": [], "bandwidth": [], "sweep": [], "skipped": []}

    def save():
        with open(os.path.join(args.out, f"part{args.part}.json"), "w") as f:
            json.dump(results, f, indent=1)

    def skip(what):
        results["skipped"].append(what)
        print(f"   skipped (part deadline): {what}", flush=True)

    # eqfuse first (seconds per model), then PyTorch in one process until the deadline
    if args.part in (1, 4):
        jobs = []
        for name, large in models(args.trees, args.part):
            if time.time() > deadline:
                skip(name)
                continue
            print(f"== eqfuse {name}", flush=True)
            eqfuse_model(args.trees, args.nvcc, args.arch, name, large,
                         results["models"].append, deadline)
            save()
            jobs += [{"model": name, "batch": b, "mode": mode, "dtype": "f32"}
                     for b in sorted({1, large}) for mode in ("eager", "cudagraphs", "compile")]
        got, skipped = torch_jobs(args.trees, jobs, deadline)
        results["torch"] += got
        results["skipped"] += skipped
    if args.part == 2:
        jobs, autotune = [], []
        for name, large in models(args.trees, 2):
            if time.time() > deadline:
                skip(f"eqfuse {name} bf16")
            else:
                print(f"== eqfuse {name} bf16", flush=True)
                eqfuse_bf16(args.trees, args.nvcc, args.arch, name, large,
                            results["models_bf16"].append, deadline)
                save()
            jobs += [{"model": name, "batch": b, "mode": mode, "dtype": "bf16"}
                     for b, mode in ((1, "eager"), (1, "compile"), (large, "eager"),
                                     (large, "compile"))]
            autotune.append({"model": name, "batch": large, "mode": "compile-max-autotune",
                             "dtype": "bf16"})
        got, skipped = torch_jobs(args.trees, jobs + autotune, deadline)  # autotuning last
        results["torch"] += got
        results["skipped"] += skipped
    if args.part == 3:
        copy = os.path.join(args.trees, "copy_bandwidth")
        sh([args.nvcc, "-O2", "-o", copy, os.path.join(args.trees, "copy_bandwidth.cu")])
        rc, out, _, _ = sh([copy, str(1 << 30)])
        ref = json.loads(out) if rc == 0 else {"gbps": None}
        results["copy"] = ref
        print(f"== copy {ref}", flush=True)
        # (model, run-time dim, bytes moved per run)
        for name, n, moved in (("pointwise_silu", 1 << 26, 2 << 28), ("pointwise_add3", 1 << 26, 4 << 28),
                               ("softmax_rows", 1 << 16, 2 << 28), ("layernorm_rows", 1 << 16, 2 << 28),
                               ("softmax_long_rows", 1 << 13, 2 << 28),
                               ("reduce_rows", 1 << 16, (1 << 28) + (1 << 18)),
                               ("reduce_long_rows", 1 << 13, (1 << 28) + (1 << 15))):
            tree = os.path.join(args.trees, "micro", name)
            if build(args.nvcc, args.arch, tree) is None:
                results["bandwidth"].append({"kernel": name, "error": "build failed"})
                continue
            seeded = os.path.join(tree, "seeded_set_0")  # the twin's outputs at a small size
            check = bench(tree, ["--test-data", seeded, "--seed", "1", "--runs", "1"]) \
                if os.path.isdir(seeded) else {}
            j = bench(tree, ["--dim", f"n={n}", "--runs", "20"])
            ms = j.get("median_ms", j.get("min_ms"))
            gbps = moved / (ms * 1e-3) / 1e9 if ms else None
            results["bandwidth"].append({"kernel": name, "ms": ms, "gbps": gbps, "error": j.get("error"),
                                         "fraction_of_copy": gbps / ref["gbps"] if gbps and ref["gbps"] else None,
                                         "numerics": check.get("match"),
                                         "checked": check.get("checked", check.get("error"))})
            print(f"   {results['bandwidth'][-1]}", flush=True)
        save()
        batches = [1, 2, 4, 8, 16, 32, 64]
        tree = os.path.join(args.trees, "bert_tiny")
        eq = {}
        if build(args.nvcc, args.arch, tree) is not None:
            for b in batches:
                eq[b] = bench(tree, ["--dim", f"batch={b}", "--runs", "20", "--seed", "2"])
        got, skipped = torch_jobs(args.trees, [{"model": "bert_tiny", "mode": "sweep",
                                                "batches": batches, "dtype": "f32"}], deadline)
        results["skipped"] += skipped
        got = [r for r in got if r.get("mode") == "sweep"]
        points = {p["batch"]: p for p in (got[0].get("points", []) if got else [])}
        for b in batches:
            e, t = eq.get(b, {}), points.get(b, {})
            results["sweep"].append({"batch": b, "eqfuse_ms": e.get("median_ms"),
                                     "eqfuse_graph_ms": e.get("graph_replay_ms"),
                                     "torch_compile_ms": t.get("median_ms"),
                                     "torch_first_call_s": t.get("first_call_s")})
        if got and "error" in got[0]:
            results["sweep_error"] = got[0]["error"]
    results["torch_startup"] = STARTUP
    save()
    print(json.dumps({"part": args.part, "skipped": results["skipped"]}))


def device_name():
    try:
        rc, out, _, _ = sh(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
        return out.strip() if rc == 0 else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def numerics_ok(m):
    """Whether every numerics check of a model's run matched (None: none ran, or one failed to)."""
    matches = [c["match"] for c in m.get("checks", [])]
    return None if not matches or None in matches else all(matches)


def typical(run):
    """A bench run's median time (its minimum in results written before the median was)."""
    return run.get("median_ms", run.get("min_ms"))


def merge(args):
    merged = {"parts": []}
    for p in (1, 2, 3, 4):
        path = os.path.join(args.out, f"part{p}.json")
        if os.path.exists(path):
            with open(path) as f:
                merged["parts"].append(json.load(f))
    merged["cost_model"] = cost_model_check(args, merged)
    with open(os.path.join(args.out, "gpu.json"), "w") as f:
        json.dump(merged, f, indent=1)
    torch_ms = {}
    for part in merged["parts"]:
        for t in part["torch"]:
            if "median_ms" in t:
                torch_ms[(t["model"], t["batch"], t["mode"], t["dtype"])] = t["median_ms"]
    print("| model | batch | eqfuse ms | eqfuse graph ms | specialized ms | specialized graph ms "
          "| eager ms | CUDA graphs ms | torch.compile ms | compile first call s | numerics |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for part in merged["parts"]:
        for m in part["models"]:
            ok = numerics_ok(m)
            for b in sorted({1, m["large_batch"]}):
                r = m.get(f"b{b}")
                if not isinstance(r, dict):
                    continue
                g, s = r["generic"], r["specialized"]
                tc = [t for t in part["torch"] if t.get("model") == m["model"] and t.get("batch") == b
                      and t.get("mode") == "compile"]
                print(f"| {m['model']} | {b} | {typical(g)} | {g.get('graph_replay_ms')} | "
                      f"{typical(s)} | {s.get('graph_replay_ms')} | "
                      f"{torch_ms.get((m['model'], b, 'eager', 'f32'))} | "
                      f"{torch_ms.get((m['model'], b, 'cudagraphs', 'f32'))} | "
                      f"{torch_ms.get((m['model'], b, 'compile', 'f32'))} | "
                      f"{tc[0].get('first_call_s') if tc else None} | {ok} |")
    lt_rows = [(m, b, m[f"b{b}"]) for part in merged["parts"] for m in part["models"]
               for b in sorted({1, m["large_batch"]})
               if isinstance(m.get(f"b{b}"), dict) and "cublas_only" in m[f"b{b}"]]
    if lt_rows:
        print("\n| model | batch | eqfuse ms (epilogues in cuBLASLt) | graph ms | epilogues in kernels "
              "ms (EQFUSE_CUBLASLT=0) | graph ms | graph ratio | cuBLASLt failures |")
        print("|---|---|---|---|---|---|---|---|")
        for m, b, r in lt_rows:
            g, p = r["generic"], r["cublas_only"]
            gg, pg = g.get("graph_replay_ms"), p.get("graph_replay_ms")
            ratio = f"{pg / gg:.2f}x" if gg and pg else "-"
            print(f"| {m['model']} | {b} | {typical(g)} | {gg} | {typical(p)} | {pg} | {ratio} | "
                  f"{len(g.get('cublaslt_failures', []))} |")
    conv_rows = [(m, b, m[f"b{b}"]) for part in merged["parts"] for m in part["models"]
                 for b in sorted({1, m["large_batch"]})
                 if isinstance(m.get(f"b{b}"), dict) and "conv_kernels_only" in m[f"b{b}"]]
    if conv_rows:
        print("\n| model | batch | eqfuse ms (each conv its faster form) | own conv kernels only ms "
              "| ratio | convs on cuDNN (of them fused) |")
        print("|---|---|---|---|---|---|")
        for m, b, r in conv_rows:
            both, own = typical(r["generic"]), typical(r["conv_kernels_only"])
            choices = r["generic"].get("conv_choices", [])
            picked = sum("-> cuDNN" in line for line in choices)
            fused = sum(line.endswith("-> cuDNN fused") for line in choices)
            ratio = f"{own / both:.2f}x" if both and own else "-"
            print(f"| {m['model']} | {b} | {both} | {own} | {ratio} | {picked} ({fused}) of "
                  f"{len(choices)} |")
    print()
    print("| model (bf16) | batch | eqfuse ms | eqfuse graph ms | eager ms | torch.compile ms "
          "| max-autotune ms | numerics |")
    print("|---|---|---|---|---|---|---|---|")
    for part in merged["parts"]:
        for m in part.get("models_bf16", []):
            ok = numerics_ok(m)
            for b in sorted({1, m["large_batch"]}):
                r = m.get(f"b{b}")
                if not isinstance(r, dict):
                    continue
                g = r["generic"]
                print(f"| {m['model']} | {b} | {typical(g)} | {g.get('graph_replay_ms')} | "
                      f"{torch_ms.get((m['model'], b, 'eager', 'bf16'))} | "
                      f"{torch_ms.get((m['model'], b, 'compile', 'bf16'))} | "
                      f"{torch_ms.get((m['model'], b, 'compile-max-autotune', 'bf16'))} | {ok} |")
    for part in merged["parts"]:
        if part.get("bandwidth"):
            print(f"\n| kernel (256 MiB tensors) | ms | GB/s | of copy ({part['copy'].get('gbps')} GB/s) "
                  "| numerics (C++ twin, small size) |")
            print("|---|---|---|---|---|")
            for k in part["bandwidth"]:
                frac = k.get("fraction_of_copy")
                print(f"| {k['kernel']} | {k.get('ms')} | {k.get('gbps') and round(k['gbps'])} | "
                      f"{frac and f'{frac:.0%}'} | {k.get('numerics')} |")
        if part.get("sweep"):
            print("\n| bert_tiny batch | eqfuse ms (one build) | eqfuse graph ms | torch.compile ms "
                  "| torch.compile first call at this batch s |")
            print("|---|---|---|---|---|")
            for p in part["sweep"]:
                print(f"| {p['batch']} | {p['eqfuse_ms']} | {p['eqfuse_graph_ms']} | "
                      f"{p['torch_compile_ms']} | {p['torch_first_call_s']} |")
        for startup in part.get("torch_startup", []):
            print(f"\npart {part['part']}: the PyTorch process paid {startup['import_torch_s']:.2f} s "
                  f"importing torch and {startup['first_compile_s']:.2f} s on its first torch.compile "
                  "(a trivial function) before the first model")
    cm = merged["cost_model"]
    if cm["by_form"]:  # trees written since stop 33 price each stage
        print("\n| cost model: stage form | stages | mean abs error |\n|---|---|---|")
        for form, e in sorted(cm["by_form"].items(), key=lambda x: str(x[0])):
            print(f"| {form} | {e['stages']} | {e['mean_abs_error']:.0%} |")
    if cm["by_class"]:
        print("\n| cost model: kernel class | kernels | mean abs error |\n|---|---|---|")
        for cls, e in sorted(cm["by_class"].items()):
            print(f"| {cls} | {e['kernels']} | {e['mean_abs_error']:.0%} |")
        if cm["refit_needed"]:
            print(f"\nover 25%: {', '.join(sorted(cm['refit_needed']))} "
                  "(python3 bench/gpu/refit_profile.py, on the CPU machine)")


def cost_model_check(args, merged):
    """Predicted (predictions.json) against measured (the generic build's per-stage times, summed
    per kernel through plan.json) time per kernel, at batch 1 and 64; the error per kernel class;
    and the same per stage, with the error per stage form."""
    rows, stage_rows = [], []
    for part in merged["parts"]:
        for m in part["models"]:
            tree = os.path.join(args.trees, m["model"])
            try:
                with open(os.path.join(tree, "plan.json")) as f:
                    plan = json.load(f)
                with open(os.path.join(tree, "predictions.json")) as f:
                    pred = {k["name"]: k for k in json.load(f)["kernels"]}
            except OSError:
                continue
            for b in (1, 64):
                r = m.get(f"b{b}")
                if not isinstance(r, dict) or "stage_ms" not in r["generic"]:
                    continue
                stage_ms = r["generic"]["stage_ms"]
                for k in plan["kernels"]:
                    measured = sum(stage_ms[s["index"]] for s in k["stages"] if s["index"] < len(stage_ms))
                    p = pred.get(k["name"], {}).get("predicted_ms", {}).get(str(b))
                    if p is None or measured <= 0:
                        continue
                    stage_pred = {st["index"]: st for st in pred.get(k["name"], {}).get("stages", [])}
                    for s in k["stages"]:
                        sp = stage_pred.get(s["index"], {}).get("predicted_ms", {}).get(str(b))
                        if sp is None or s["index"] >= len(stage_ms):
                            continue
                        stage_rows.append({"model": m["model"], "batch": b, "stage": s["index"],
                                           "form": s.get("form"), "predicted_ms": sp,
                                           "measured_ms": stage_ms[s["index"]]})
                    kinds = sorted({s["kind"] for s in k["stages"]})
                    rows.append({"model": m["model"], "batch": b, "kernel": k["name"],
                                 "class": "+".join(kinds), "predicted_ms": p, "measured_ms": measured,
                                 "error": (p - measured) / measured})
    by_class = {}
    for row in rows:
        by_class.setdefault(row["class"], []).append(abs(row["error"]))
    summary = {c: {"kernels": len(e), "mean_abs_error": sum(e) / len(e)} for c, e in by_class.items()}
    by_form = {}
    for row in stage_rows:  # a stage another computes (an epilogue) was measured as nothing
        if row["measured_ms"] > 0 and row["predicted_ms"] > 0:
            e = (row["predicted_ms"] - row["measured_ms"]) / row["measured_ms"]
            by_form.setdefault(row["form"], []).append(abs(e))
    return {"kernels": rows, "by_class": summary, "stages": stage_rows,
            "by_form": {f: {"stages": len(e), "mean_abs_error": sum(e) / len(e)}
                        for f, e in by_form.items()},
            "refit_needed": [c for c, s in summary.items() if s["mean_abs_error"] > 0.25]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--part", type=int, default=1)
    ap.add_argument("--trees", default=os.path.join(HERE, "trees"))
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
    ap.add_argument("--arch", default=os.environ.get("ARCH", "sm_90a"))
    ap.add_argument("--merge", action="store_true")
    args = ap.parse_args()
    if args.merge:
        merge(args)
    else:
        run_part(args)


if __name__ == "__main__":
    main()
