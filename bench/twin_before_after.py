#!/usr/bin/env python3
"""The C++ twin of shared models as two eqfuse builds generate it, timed side by side.

    python3 bench/twin_before_after.py BEFORE/eqfuse AFTER/eqfuse MODEL... [--shared ../shared]

For each model, each build writes a CPU tree (`eqfuse compile --target cpu`), CMake builds it,
and the two trees' bench programs run in alternating rounds on the model's first test set
(`--runs 10`, best of 4 rounds; every run must match the test data). A structure-only model
(its weights absent, as `eqfuse info` reports: resnet50, bert_base, vit_b_16) is compiled with
`--seed-weights`, which both builds must have (eqfuse after 3cc5b0a); a model without test data
runs on the bench's seeded inputs, and there the two trees' f32 outputs must agree with each
other (`--write-outputs`, rtol 1e-3, atol 1e-4). Prints a Markdown table of the best times and
their ratio.
"""
import argparse
import json
import math
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path


def floats_of(pb):
    """The raw data of a TensorProto file the bench wrote (field 9, raw_data) as floats, or None
    where its data_type (field 2) is not FLOAT."""
    b, i, dtype = Path(pb).read_bytes(), 0, None
    while i < len(b):
        key, i = varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(b, i)
            if field == 2:
                dtype = value
        elif wire == 2:
            n, i = varint(b, i)
            if field == 9:
                return struct.unpack(f"<{n // 4}f", b[i:i + n]) if dtype == 1 else None
            i += n
        elif wire == 5:
            i += 4
        elif wire == 1:
            i += 8
        else:
            raise SystemExit(f"{pb}: unexpected wire type {wire}")
    raise SystemExit(f"{pb}: no raw_data")


def varint(b, i):
    v = shift = 0
    while True:
        v |= (b[i] & 0x7F) << shift
        i += 1
        if b[i - 1] < 0x80:
            return v, i
        shift += 7


def agree(x, y, rtol=1e-3, atol=1e-4):
    return len(x) == len(y) and all(
        math.isfinite(a) and abs(a - b) <= atol + rtol * abs(b) for a, b in zip(x, y))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("models", nargs="+")
    p.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    p.add_argument("--rounds", type=int, default=4)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="twin_before_after_"))
    print("| model | twin before ms | twin after ms | speed-up |\n|---|---|---|---|")
    for m in a.models:
        model = Path(a.shared) / "models" / m
        data = model / "test_data_set_0"
        info = json.loads(subprocess.run([a.after, "info", "--json", str(model / "model.onnx")],
                                         check=True, capture_output=True, text=True).stdout)
        structure_only = bool(info["parameters"]["missing_weight_files"])
        seeded = not data.exists()
        trees = {}
        for tag, exe in (("before", a.before), ("after", a.after)):
            d = work / f"{m}_{tag}"
            subprocess.run([exe, "compile", str(model / "model.onnx"), "--target", "cpu", "--out",
                            str(d)] + (["--seed-weights"] if structure_only else []), check=True,
                           capture_output=True)
            subprocess.run(["cmake", "-S", str(d), "-B", str(d / "build"),
                            "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
            subprocess.run(["cmake", "--build", str(d / "build")], check=True, capture_output=True)
            trees[tag] = d
        best = {}
        for _ in range(a.rounds):
            for tag, d in trees.items():
                (d / "outputs").mkdir(exist_ok=True)
                given = (["--write-outputs", str(d / "outputs")] if seeded else
                         ["--test-data", str(data)])
                out = subprocess.run([str(d / "build" / "bench"), *given, "--runs", "10"], cwd=d,
                                     check=True, capture_output=True, text=True).stdout
                j = json.loads(out)
                if not seeded and not j["match"]:
                    raise SystemExit(f"{m}: the {tag} twin does not match its test data")
                best[tag] = min(best.get(tag, float("inf")), j["min_ms"])
        if seeded:
            for pb in sorted((trees["before"] / "outputs").glob("output_*.pb")):
                before, after = floats_of(pb), floats_of(trees["after"] / "outputs" / pb.name)
                if before is not None and not agree(after, before):
                    raise SystemExit(f"{m}: the two twins' {pb.name} differ (seeded inputs)")
        print(f"| {m}{' (seeded weights)' if structure_only else ''} | {best['before']:.3f} | "
              f"{best['after']:.3f} | {best['before'] / best['after']:.2f}x |", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
