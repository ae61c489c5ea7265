#!/usr/bin/env bash
# bench/run.sh: build the benchmark driver and run it; the table goes to stdout and to a file.
#
#   bench/run.sh              full run: every size, 60 s per query and solver (about an hour)
#   bench/run.sh --quick      the two smallest sizes, 10 s limit (a minute or two)
#   bench/run.sh [--no-build] [driver options...]   see build/$MODE/bench/bench_engine --help
#
# Results: build/$MODE/bench/results-<date>.md, with the machine, the date and the command.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-release}
build=1
args=()
for a in "$@"; do
    if [ "$a" = "--no-build" ]; then build=0; else args+=("$a"); fi
done
if [ "$build" = 1 ]; then
    make --no-print-directory -f bench/bench.mk bench-build MODE="$MODE"
fi
bin=build/$MODE/bench/bench_engine
mkdir -p "build/$MODE/bench"
out=build/$MODE/bench/results-$(date +%Y%m%d-%H%M%S).md
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
mem=$(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo)
z3v=$(command -v z3 >/dev/null && z3 --version || echo "z3 binary absent")
cvc5v=$(command -v cvc5 >/dev/null && cvc5 --version | head -1 || echo "cvc5 binary absent")
{
    echo "## shardproof engine vs Z3 vs cvc5"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- machine: $(nproc) CPUs, $cpu, $mem RAM, $(uname -sr); load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
    echo "- solvers: $z3v (C API: libz3 $(dpkg-query -W -f '${Version}' libz3-dev 2>/dev/null || echo '?')), $cvc5v"
    echo "- command: \`bench/run.sh${args[*]:+ ${args[*]}}\` (driver: \`$bin${args[*]:+ ${args[*]}}\`)"
    echo
} | tee "$out"
"$bin" ${args[@]+"${args[@]}"} | tee -a "$out"
echo "bench: results in $out" >&2
