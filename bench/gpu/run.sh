#!/usr/bin/env bash
# The GPU benchmark, on a machine with an NVIDIA GPU, nvcc and PyTorch (see bench/gpu/run.py):
#   bench/gpu/prepare.sh              first, on the CPU machine (writes bench/gpu/trees)
#   bench/gpu/run.sh --part 1         then on the GPU machine, each part at most ~5 minutes
#   bench/gpu/run.sh --merge          joins the parts: results/gpu.json and a table
# A whole session on a lent machine: prepare.sh and pack_eqfuse.sh here, then carry
# bench/gpu/trees and run bench/gpu/device.sh "1:185 4:95 2:120 backend:50" there.
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--merge" ]; then
  exec python3 run.py --merge
fi
part=1
if [ "${1:-}" = "--part" ]; then part=${2:?--part needs a number}; fi
python3 run.py --part "$part"
python3 run.py --merge
