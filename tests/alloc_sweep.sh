#!/usr/bin/env bash
# alloc_sweep.sh: fail the N-th allocation for N spread over a whole check of a mid-size plan;
# every run must end cleanly: UNKNOWN naming the limit (exit 3, `limit memory` on standard
# error, and on standard output the report of the --format asked for, the four in turn, valid
# and UNKNOWN) or the normal verdict, never a signal, a hang, an internal error or another code.
set -u
bin=$1
plan=${2:-$(dirname "$0")/../docs/examples/pipeline.sp}
total=$(SP_COUNT_ALLOC=1 "$bin" check "$plan" --no-progress -j 1 2>&1 >/dev/null | sed -n 's/^shardproof: \([0-9]*\) allocations$/\1/p')
[ -n "$total" ] || { echo "alloc_sweep: could not count allocations"; exit 1; }
pass=0
fail=0
docs=0
formats=(text json sarif junit)
n=1
while [ "$n" -le $((total + 1)) ]; do
    fmt=${formats[$((n % 4))]}
    timeout 60 env SP_FAIL_ALLOC=$n "$bin" check "$plan" --no-progress -j 1 --format "$fmt" \
        >/tmp/alloc_sweep_out.$$ 2>/tmp/alloc_sweep.$$
    rc=$?
    # standard output holds the report of the format asked for: UNKNOWN with the limit as its
    # reason (empty only when the allocation failed before the options were read)
    doc=ok
    if [ "$rc" = 3 ] && [ -s /tmp/alloc_sweep_out.$$ ]; then
        docs=$((docs + 1))
        if [ "$fmt" = text ]; then
            grep -q "^reason: limit memory: an allocation of [0-9]* bytes failed" /tmp/alloc_sweep_out.$$ || doc=bad
        elif [ -x /usr/bin/python3 ]; then
            /usr/bin/python3 "$(dirname "$0")/check_reports.py" "$fmt" 3 /tmp/alloc_sweep_out.$$ >/tmp/alloc_sweep_doc.$$ || doc=bad
        fi
    fi
    if { [ "$rc" = 3 ] && [ "$doc" = ok ] && grep -q "^shardproof: UNKNOWN: limit memory: an allocation of [0-9]* bytes failed" /tmp/alloc_sweep.$$; } ||
        { [ "$n" -gt "$total" ] && [ "$rc" = 0 ]; }; then
        pass=$((pass + 1))
    else
        [ "$doc" = ok ] || { echo "alloc_sweep: the $fmt report is not one:"; head -5 /tmp/alloc_sweep_doc.$$ /tmp/alloc_sweep_out.$$; }
        fail=$((fail + 1))
        echo "alloc_sweep: failing allocation $n of $total: exit $rc"
        tail -3 /tmp/alloc_sweep.$$
    fi
    if [ "$n" -lt 64 ]; then n=$((n + 1)); else n=$((n * 9 / 8)); fi
done
rm -f /tmp/alloc_sweep.$$ /tmp/alloc_sweep_out.$$ /tmp/alloc_sweep_doc.$$
echo "alloc_sweep: $total allocations; $pass passed ($docs with a report on standard output), $fail failed"
[ "$fail" = 0 ]
