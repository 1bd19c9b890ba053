#!/usr/bin/env bash
# The ILP three ways, one file after another, side by side, as a Markdown table of cost, gap to
# the proven bound, optimal? and seconds: CBC alone on the whole problem (--whole --cbc-only),
# CBC on the parts split at separator e-classes (--cbc-only), and the default (each part
# searched best-first first where it is acyclic, then CBC).
# Usage: bench/extract_ilp_ablation.sh [EQFUSE] [TIME_LIMIT] FILE.json...
set -euo pipefail
eqfuse=${1:-build/tools/eqfuse}
limit=${2:-60}
shift $(($# < 2 ? $# : 2))
row() {
  python3 -c "
import json, sys
j = json.load(sys.stdin)
gap = '—' if j['bound'] is None else '%.2f%%' % (100 * (j['dag_cost'] - j['bound']) / j['dag_cost'])
print('%.6f | %s | %s | %.1f' % (j['dag_cost'], gap, '**true**' if j['optimal'] else 'false', j['seconds']))"
}
run() { "$eqfuse" extract "$1" --method ilp --time-limit "$limit" --json "${@:2}" | row; }
echo "| file | CBC whole: cost | gap | optimal | s | CBC split: cost | gap | optimal | s | default: cost | gap | optimal | s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for f in "$@"; do
  echo "| $(basename "$f" .json) | $(run "$f" --whole --cbc-only) | $(run "$f" --cbc-only) | $(run "$f") |"
done
