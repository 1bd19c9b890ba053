"""eqfuse: optimize deep-learning models by equality saturation, with every rewrite proved.

    import eqfuse
    model, report = eqfuse.optimize("model.onnx", device="h200")
    outputs = eqfuse.run(model, {"x": x})                 # NumPy arrays in and out
    proofs = eqfuse.check_rules("my.rules")              # one dict per rule, Z3's verdict

A model is a path, the bytes of an ONNX model, or an onnx.ModelProto. Failures raise
eqfuse.Error (a RuntimeError) with the message the command line prints and a `kind`:
"bad_input", "unsupported", "check_failed" or "internal".
"""

import json as _json
import os as _os

from . import _eqfuse as _native
from ._eqfuse import Error

__all__ = ["Error", "optimize", "run", "check_rules"]
__version__ = "0.1.0"


def optimize(model, device="h200", dims=None, rules=None, time_limit=20.0, node_limit=50000,
             iter_limit=8, extract="dag", phases=("algebra", "fusion"), verify=True,
             out=None, precision="f32"):
    """Optimizes a model: proved rewrites and fusion in one e-graph, extraction by cost.

    device: a builtin profile (a6000, a100, h100, h200, h200-calibrated) or a JSON file.
    dims: {"batch": 64, ...} binds symbolic dims for the cost model.
    rules: rule files to use instead of the library (each proved before use).
    extract: "dag" (default), "ilp" or "greedy". phases: any of "algebra", "fusion".
    verify: run both graphs in the interpreter on random inputs and fail on a difference.
    out: also save the optimized model to this path.
    precision: "f16" or "bf16" prices f32 tensors as run(..., precision=) stores them (the model
    stays f32).

    Returns (onnx.ModelProto, report), the report as `eqfuse optimize --json` prints it.
    """
    import onnx

    data, report = _native.optimize(model, device, dict(dims or {}), list(rules or []),
                                    float(time_limit), int(node_limit), int(iter_limit),
                                    extract, list(phases), bool(verify), str(precision))
    proto = onnx.load_from_string(data)
    if out is not None:
        with open(_os.fspath(out), "wb") as f:
            f.write(data)
    return proto, _json.loads(report)


def run(model, inputs, backend="interpreter", precision="f32"):
    """Runs a model on {input name: NumPy array}; returns {output name: NumPy array}.

    backend: "interpreter" (the reference), "cpu" (the generated C++ twin, built with the
    system compiler on first use and cached under $XDG_CACHE_HOME/eqfuse) or "cuda" (the
    generated CUDA, built with NVRTC on first use; without a GPU it raises eqfuse.Error).
    bfloat16 outputs come back as float32.
    precision: "f32", or with generated code "f16"/"bf16": weights and intermediates are stored
    at 16 bits and computed in f32 (an approximation; `eqfuse run --precision` states its error
    against the f32 model).
    """
    return dict(_native.run(model, dict(inputs), backend, precision))


def check_rules(*files, text=None, jobs=0, cache=True):
    """Proves every rule of the rule files (and of `text`) with Z3.

    Returns one dict per rule: name, verdict ("proved", "refuted", "unknown", "invalid",
    "unseparated"), seconds, cached, bounds, coverage, and where there are a reason and a
    counterexample. A file that cannot be read or parsed raises eqfuse.Error (file:line:col).
    """
    paths = [_os.fspath(f) for f in files]
    return _json.loads(_native.check_rules(paths, text or "", int(jobs), bool(cache)))

