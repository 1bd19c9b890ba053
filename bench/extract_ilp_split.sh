#!/usr/bin/env bash
# The ILP with and without its split at separator e-classes (eqfuse extract --whole), one file
# after another, side by side, as a Markdown table: cost, gap to the proven bound, optimal?, s.
# Usage: bench/extract_ilp_split.sh [EQFUSE] [TIME_LIMIT] FILE.json...
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
echo "| file | whole: cost | gap | optimal | s | split: cost | gap | optimal | s |"
echo "|---|---|---|---|---|---|---|---|---|"
for f in "$@"; do
  whole=$("$eqfuse" extract "$f" --method ilp --time-limit "$limit" --whole --json | row)
  split=$("$eqfuse" extract "$f" --method ilp --time-limit "$limit" --json | row)
  echo "| $(basename "$f" .json) | $whole | $split |"
done
