#!/usr/bin/env bash
# On the GPU machine, from the repository root with bench/gpu/trees carried there (prepare.sh and
# pack_eqfuse.sh wrote it): runs the steps given, each under its time limit in seconds, and
# copies the results to $OUT (default bench/gpu/out) after each, so that a run cut short still
# returns what it measured. A step is a part of run.py ("1:185") or "backend:SECONDS"
# (check_backend.py --quick with the packed eqfuse). Ends with the merged table.
#   bench/gpu/device.sh "1:185 4:95 2:120 backend:50"
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/gpu/out}
mkdir -p "$OUT"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ -f bench/gpu/trees/eqfuse.tar.xz ]; then
  mkdir -p /tmp/eq && tar -xJf bench/gpu/trees/eqfuse.tar.xz -C /tmp/eq
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,power.limit --format=csv \
  > "$OUT/nvidia-smi.txt" 2>&1
save() { tar -cf "$OUT/results.tar" bench/gpu/results; }
for step in ${1:?steps, e.g. "1:185 4:95 2:120 backend:50"}; do
  name=${step%%:*}
  secs=${step##*:}
  echo "== $name ($secs s) $(date +%T)"
  if [ "$name" = backend ]; then
    LD_LIBRARY_PATH=/tmp/eq/lib:$LD_LIBRARY_PATH timeout "$secs" \
      python3 bench/gpu/check_backend.py /tmp/eq/eqfuse --quick > "$OUT/backend.log" 2>&1
    echo "rc $?"
    tail -20 "$OUT/backend.log"
  else
    EQFUSE_PART_SECONDS=$((secs - 15)) timeout $((secs + 40)) \
      python3 bench/gpu/run.py --part "$name" > "$OUT/part$name.log" 2>&1
    echo "rc $?"
    tail -8 "$OUT/part$name.log"
  fi
  save
done
python3 bench/gpu/run.py --merge > "$OUT/table.md" 2>&1
save
tail -60 "$OUT/table.md"
