#!/usr/bin/env python3
"""The C++ twin of shared models as two eqfuse builds generate it, timed side by side.

    python3 bench/twin_before_after.py BEFORE/eqfuse AFTER/eqfuse MODEL... [--shared ../shared]

For each model, each build writes a CPU tree (`eqfuse compile --target cpu`), CMake builds it,
and the two trees' bench programs run in alternating rounds on the model's first test set
(`--runs 10`, best of 4 rounds; every run must match the test data). Prints a Markdown table of
the best times and their ratio.
"""
import argparse
import json
import shutil
import subprocess
import tempfile
from pathlib import Path


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
        trees = {}
        for tag, exe in (("before", a.before), ("after", a.after)):
            d = work / f"{m}_{tag}"
            subprocess.run([exe, "compile", str(model / "model.onnx"), "--target", "cpu", "--out",
                            str(d)], check=True, capture_output=True)
            subprocess.run(["cmake", "-S", str(d), "-B", str(d / "build"),
                            "-DCMAKE_BUILD_TYPE=Release"], check=True, capture_output=True)
            subprocess.run(["cmake", "--build", str(d / "build")], check=True, capture_output=True)
            trees[tag] = d
        best = {}
        for _ in range(a.rounds):
            for tag, d in trees.items():
                out = subprocess.run([str(d / "build" / "bench"), "--test-data",
                                      str(model / "test_data_set_0"), "--runs", "10"], cwd=d,
                                     check=True, capture_output=True, text=True).stdout
                j = json.loads(out)
                if not j["match"]:
                    raise SystemExit(f"{m}: the {tag} twin does not match its test data")
                best[tag] = min(best.get(tag, float("inf")), j["min_ms"])
        print(f"| {m} | {best['before']:.3f} | {best['after']:.3f} | "
              f"{best['before'] / best['after']:.2f}x |", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
