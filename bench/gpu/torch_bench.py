"""PyTorch's side of the GPU benchmark: one process that times a list of jobs and prints one JSON
line per job as it finishes (run.py reads them as they come, so a part's deadline loses only the
job in flight).

  python3 torch_bench.py TREES JOBS.json

A job is {"model", "batch", "mode", "dtype"} with mode eager | cudagraphs | compile |
compile-max-autotune, or {"model", "mode": "sweep", "batches": [...], "dtype"}: one
torch.compile'd model called at each batch in turn, as a user would, recording the first call
at each (a recompile where its guards fail) and the steady time.

Every timing is the median of 50 runs timed with CUDA events after 10 warm-ups, f32 with TF32
off (matmul and cuDNN) or the model converted to bf16. torch.compile's first call runs with
the Inductor and Triton caches empty (run.py points them at fresh folders); the process has
imported torch and compiled a trivial function first, so that call does not include loading
Inductor itself: the first line printed, {"startup": ...}, says what those cost.
"""
import json
import sys
import time

STARTED = time.time()
import torch  # noqa: E402

sys.path.insert(0, sys.argv[1])
import torch_defs  # noqa: E402  (from the trees folder that prepare.sh wrote)

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")


def median_ms(fn, inputs, runs=50, warmup=10):
    for _ in range(warmup):
        fn(*inputs)
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(runs):
        e0.record()
        fn(*inputs)
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1))
    times.sort()
    return times[len(times) // 2]


def first_call_s(fn, inputs):
    torch.cuda.synchronize()
    t0 = time.time()
    fn(*inputs)
    torch.cuda.synchronize()
    return time.time() - t0


def prepared(name, batch, dtype):
    model, inputs = torch_defs.build(name, batch)
    dt = torch.bfloat16 if dtype == "bf16" else torch.float32
    model = model.cuda().to(dt)
    inputs = [t.cuda().to(dt) if t.is_floating_point() else t.cuda() for t in inputs]
    return model, inputs


def run_job(job):
    name, mode, dtype = job["model"], job["mode"], job.get("dtype", "f32")
    result = dict(job)
    with torch.no_grad():
        if mode == "sweep":
            torch._dynamo.reset()
            model, _ = prepared(name, 1, dtype)
            fn = torch.compile(model)
            result["points"] = []
            for b in job["batches"]:
                _, inputs = torch_defs.build(name, b)
                dt = torch.bfloat16 if dtype == "bf16" else torch.float32
                inputs = [t.cuda().to(dt) if t.is_floating_point() else t.cuda() for t in inputs]
                first = first_call_s(fn, inputs)
                result["points"].append({"batch": b, "first_call_s": first,
                                         "median_ms": median_ms(fn, inputs, runs=20, warmup=3)})
            return result
        model, inputs = prepared(name, job["batch"], dtype)
        fn = model
        if mode.startswith("compile"):
            torch._dynamo.reset()
            kw = {} if mode == "compile" else {"mode": "max-autotune-no-cudagraphs"}
            fn = torch.compile(model, **kw)
            result["first_call_s"] = first_call_s(fn, inputs)
        elif mode == "cudagraphs":
            static = [t.clone() for t in inputs]
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(*static)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                model(*static)
            fn = lambda *a: graph.replay()  # noqa: E731
        result["median_ms"] = median_ms(fn, inputs)
    return result


def main():
    with open(sys.argv[2]) as f:
        jobs = json.load(f)
    imported = time.time()
    with torch.no_grad():  # load Inductor once, outside every measured first call
        torch.compile(lambda x: x * 2 + 1)(torch.ones(8, device="cuda"))
        torch.cuda.synchronize()
    torch._dynamo.reset()
    # What a fresh process pays once before its first compiled model: to add to first_call_s
    # for a cold start.
    print(json.dumps({"startup": {"import_torch_s": imported - STARTED,
                                  "first_compile_s": time.time() - imported}}), flush=True)
    for job in jobs:
        try:
            result = run_job(job)
        except Exception as e:  # one failing model must not lose the others' figures
            result = dict(job, error=f"{type(e).__name__}: {str(e)[-400:]}")
        print(json.dumps(result), flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
