#!/usr/bin/env bash
# The ILP against its warm start (the DAG-aware heuristic) on the tensat e-graphs, one file after
# another, as a Markdown table: warm start, ILP cost, proven bound, optimal?, ILP seconds.
# Usage: bench/extract_ilp_table.sh [EQFUSE] [TIME_LIMIT] [FILES...]
set -euo pipefail
eqfuse=${1:-build/tools/eqfuse}
limit=${2:-60}
shift $(($# < 2 ? $# : 2))
dir=$(dirname "$0")/../../shared/egraphs/tensat
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(bert bert_acyclic resnet50 vgg nasneta nasneta_acyclic nasrnn nasrnn_acyclic
  resnet50_acyclic vgg_acyclic)
field() { python3 -c "import json,sys; v=json.load(sys.stdin)['$1']; print('—' if v is None else (('%.6f' % v) if isinstance(v, float) else str(v).lower()))"; }
echo "| file | warm start (dag) | ilp | bound | gap | optimal | ilp seconds |"
echo "|---|---|---|---|---|---|---|"
for f in "${files[@]}"; do
  dag=$("$eqfuse" extract "$dir/$f.json" --method dag --json)
  ilp=$("$eqfuse" extract "$dir/$f.json" --method ilp --time-limit "$limit" --json)
  gap=$(echo "$ilp" | python3 -c "import json,sys; j=json.load(sys.stdin); print('—' if j['bound'] is None else '%.1f%%' % (100*(j['dag_cost']-j['bound'])/j['dag_cost']))")
  echo "| $f | $(echo "$dag" | field dag_cost) | $(echo "$ilp" | field dag_cost) | $(echo "$ilp" | field bound) | $gap | $(echo "$ilp" | field optimal) | $(echo "$ilp" | python3 -c "import json,sys; print('%.1f' % json.load(sys.stdin)['seconds'])") |"
done
