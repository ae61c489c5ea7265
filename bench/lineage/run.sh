#!/usr/bin/env bash
# bench/lineage/run.sh: lineage inference (issue 15) against written lineage, in one run.
# For each configuration, `shardproof gen` writes the plan twice, annotated (the default) and
# with `--lineage none` (inputs' layouts and outputs only); both are checked with plain
# `shardproof check` (inference is on by default for a plan without lineage) under
# /usr/bin/time, and the table gives verdict, stages, CPU (user + system) and peak RSS of both
# and the ratio of CPU times.  Timings are measured, never asserted (docs/benchmarks.md).
# usage: bench/lineage/run.sh [--bin SHARDPROOF] [--quick]
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/release/shardproof
quick=0
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift ;;
    --quick) quick=1 ;;
    *) echo "usage: $0 [--bin SHARDPROOF] [--quick]" >&2; exit 2 ;;
    esac
    shift
done
configs=(
    "llama3 --preset 8b --dp 2 --tp 2 --layers 1"
    "llama3 --preset 8b --dp 2 --tp 2 --pp 2 --nm 2 --layers 2"
    "llama3 --preset 8b --cp 2 --tp 2 --sp --layers 2"
    "llama3 --preset 8b --cp 2 --tp 2 --cp-algo ring --layers 2"
    "llama3 --preset 8b --dp 2 --tp 2 --pp 2 --nm 2 --schedule 1f1b --layers 2"
    "deepseek3 --dp 2 --ep 2 --tp 2 --layers 2"
)
[ $quick = 1 ] || configs+=("llama3 --preset 8b --dp 2 --tp 2 --pp 2 --nm 2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); binary: $bin ($(cd "$root" && git rev-parse --short HEAD 2>/dev/null))"
echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GB", $2/1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg) at the start"
echo
echo "| gen options | annotated: verdict, stages, CPU, RSS | --lineage none: verdict, stages (inferred), CPU, RSS | CPU ratio |"
echo "|---|---|---|---|"
one() { # FILE -> "verdict|stages|cpu|rss|inferred"
    /usr/bin/time -f '%U %S %M' -o "$tmp/time" "$bin" check "$1" --no-progress --format json >"$tmp/out" 2>/dev/null
    /usr/bin/python3 - "$tmp/out" "$tmp/time" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    v = d.get("verdict", "?"); st = d["summary"]["stages"]
    inf = sum(1 for s in d.get("stages", []) if s.get("kind") == "inferred")
except Exception:
    v, st, inf = "no report", 0, 0
u, s, m = open(sys.argv[2]).read().split()[-3:]
print(f"{v}|{st}|{float(u) + float(s):.2f}|{int(m) // 1024}|{inf}")
PY
}
for c in "${configs[@]}"; do
    "$bin" gen $c >"$tmp/a.sp" && "$bin" gen $c --lineage none >"$tmp/n.sp" || { echo "| \`$c\` | gen failed | | |"; continue; }
    IFS='|' read -r av as ac ar _ <<<"$(one "$tmp/a.sp")"
    IFS='|' read -r nv ns nc nr ni <<<"$(one "$tmp/n.sp")"
    ratio=$(awk -v a="$ac" -v b="$nc" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')
    echo "| \`$c\` | $av, $as, ${ac} s, ${ar} MB | $nv, $ns ($ni), ${nc} s, ${nr} MB | ${ratio}x |"
done
