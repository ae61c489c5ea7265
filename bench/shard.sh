#!/usr/bin/env bash
# bench/shard.sh: the CPU time of `check --shard I/N` per shard against the whole check, on a
# generated plan, runs alternating (whole, shard 0, ..., shard N-1) R times; the median of each,
# the ratio shard / whole, and whether merge's report is byte-identical to the whole check's.
#
#   bench/shard.sh --bin PATH [--shards N] [--runs R] [--jobs J] ['GEN ARGS']
#
# Default plan: the 32-layer `gen llama3 --preset 8b --dp 2 --tp 2 --pp 2 --nm 2` of issue 12's
# Done-when.  Prints a Markdown table (docs/benchmarks.md, section 21).
set -u
bin= shards=2 runs=3 jobs=1
cfg="llama3 --preset 8b --dp 2 --tp 2 --pp 2 --nm 2"
while [ $# -gt 0 ]; do
    case $1 in
    --bin) bin=$2; shift 2 ;;
    --shards) shards=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "shard.sh: unknown option $1" >&2; exit 2 ;;
    *) cfg=$1; shift ;;
    esac
done
[ -x "$bin" ] || { echo "shard.sh: --bin must be an executable" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck disable=SC2086
"$bin" gen $cfg -o "$tmp/p.sp" >/dev/null || { echo "shard.sh: gen $cfg failed" >&2; exit 2; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
cpu() { # OUT ARGS...: one check, its CPU seconds; peak RSS (MB) into $tmp/rss
    local out=$1; shift
    /usr/bin/time -f "%U %S %M" "$bin" check "$tmp/p.sp" --no-progress -j "$jobs" "$@" >"$out" 2>"$tmp/t"
    tail -1 "$tmp/t" | awk -v r="$tmp/rss" '{ printf "%.2f\n", $1 + $2; print int($3 / 1024) > r }'
}
for ((r = 0; r < runs; r++)); do
    cpu "$tmp/whole.txt" >>"$tmp/c.whole"
    cat "$tmp/rss" >>"$tmp/m.whole"
    for ((i = 0; i < shards; i++)); do
        cpu "$tmp/part$i.json" --shard $i/$shards >>"$tmp/c.$i"
        cat "$tmp/rss" >>"$tmp/m.$i"
    done
done
parts=()
for ((i = 0; i < shards; i++)); do parts+=("$tmp/part$i.json"); done
"$bin" merge "${parts[@]}" --no-progress -j "$jobs" >"$tmp/merged.txt" 2>/dev/null
same=differs
cmp -s "$tmp/whole.txt" "$tmp/merged.txt" && same=identical
w=$(median <"$tmp/c.whole")
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(sed -n 's/^model name\t: //p' /proc/cpuinfo | head -1); gen $cfg; -j $jobs; $runs runs each, alternating"
echo
echo "| run | CPU (runs) | median | peak RSS | / whole |"
echo "|---|---|---|---|---|"
echo "| whole | $(paste -sd' ' "$tmp/c.whole") | $w s | $(median <"$tmp/m.whole") MB | 1.00 |"
for ((i = 0; i < shards; i++)); do
    m=$(median <"$tmp/c.$i")
    echo "| shard $i/$shards | $(paste -sd' ' "$tmp/c.$i") | $m s | $(median <"$tmp/m.$i") MB | $(awk -v a="$m" -v b="$w" 'BEGIN { printf "%.2f", a / b }') |"
done
echo
echo "merged report: $same to the whole check's"
