#!/usr/bin/env bash
# alloc_sweep.sh: fail the N-th allocation for N spread over a whole check of a mid-size plan;
# every run must end cleanly: UNKNOWN naming the limit (exit 3, `limit memory` on standard
# error) or the normal verdict, never a signal, a hang, an internal error or another code.
set -u
bin=$1
plan=${2:-$(dirname "$0")/../docs/examples/pipeline.sp}
total=$(SP_COUNT_ALLOC=1 "$bin" check "$plan" --no-progress -j 1 2>&1 >/dev/null | sed -n 's/^shardproof: \([0-9]*\) allocations$/\1/p')
[ -n "$total" ] || { echo "alloc_sweep: could not count allocations"; exit 1; }
pass=0
fail=0
n=1
while [ "$n" -le $((total + 1)) ]; do
    timeout 60 env SP_FAIL_ALLOC=$n "$bin" check "$plan" --no-progress -j 1 >/dev/null 2>/tmp/alloc_sweep.$$
    rc=$?
    if { [ "$rc" = 3 ] && grep -q "^shardproof: UNKNOWN: limit memory: an allocation of [0-9]* bytes failed" /tmp/alloc_sweep.$$; } ||
        { [ "$n" -gt "$total" ] && [ "$rc" = 0 ]; }; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "alloc_sweep: failing allocation $n of $total: exit $rc"
        tail -3 /tmp/alloc_sweep.$$
    fi
    if [ "$n" -lt 64 ]; then n=$((n + 1)); else n=$((n * 9 / 8)); fi
done
rm -f /tmp/alloc_sweep.$$
echo "alloc_sweep: $total allocations; $pass passed, $fail failed"
[ "$fail" = 0 ]
