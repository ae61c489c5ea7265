#!/usr/bin/env bash
# alloc_sweep.sh: fail the N-th allocation for N spread over a whole check of a mid-size plan;
# every run must end cleanly: UNKNOWN naming the limit (exit 3, `limit memory` on standard
# error, and on standard output the report of the --format asked for, the four in turn, valid
# and UNKNOWN) or the normal verdict, never a signal, a hang, an internal error or another code.
set -u
bin=$1
plan=${2:-$(dirname "$0")/../docs/examples/pipeline.sp}
total=$(SP_COUNT_ALLOC=1 "$bin" check "$plan" --no-progress -j 1 2>&1 >/dev/null | sed -n 's/^shardproof: \([0-9]*\) allocations, [0-9]* mapped$/\1/p')
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
echo "alloc_sweep: $total allocations; $pass passed ($docs with a report on standard output), $fail failed"

# the stores' arrays of 4 MB and more are mapped directly (sp_big_realloc), not through the
# allocator above: SP_FAIL_BIG=N fails the N-th mapping, on a plan large enough to have them.
# A failure is the store's out-of-memory path: the run must end EQUIVALENT as without it (a
# failed first attempt is retried in a fresh store; a key that cannot be built leaves its stage
# unkeyed) or UNKNOWN naming a limit, never another exit code or a crash.
"$bin" gen llama3 --dp 2 --layers 2 >/tmp/alloc_sweep_big.$$.sp
mapped=$(SP_COUNT_ALLOC=1 "$bin" check /tmp/alloc_sweep_big.$$.sp --no-progress -j 1 2>&1 >/dev/null | sed -n 's/^shardproof: [0-9]* allocations, \([0-9]*\) mapped$/\1/p')
[ -n "$mapped" ] || { echo "alloc_sweep: could not count mapped arrays"; fail=$((fail + 1)); mapped=0; }
bpass=0
for n in $(seq 1 $((mapped + 1))); do
    timeout 120 env SP_FAIL_BIG=$n "$bin" check /tmp/alloc_sweep_big.$$.sp --no-progress -j 1 \
        >/tmp/alloc_sweep_out.$$ 2>/tmp/alloc_sweep.$$
    rc=$?
    if { [ "$rc" = 0 ] && grep -q "^EQUIVALENT$" /tmp/alloc_sweep_out.$$; } ||
        { [ "$rc" = 3 ] && grep -q "^reason: limit" /tmp/alloc_sweep_out.$$; }; then
        bpass=$((bpass + 1))
    else
        fail=$((fail + 1))
        echo "alloc_sweep: failing mapping $n of $mapped: exit $rc"
        tail -3 /tmp/alloc_sweep.$$ /tmp/alloc_sweep_out.$$
    fi
done
echo "alloc_sweep: $mapped mapped arrays; $bpass passed"
rm -f /tmp/alloc_sweep.$$ /tmp/alloc_sweep_out.$$ /tmp/alloc_sweep_doc.$$ /tmp/alloc_sweep_big.$$.sp
[ "$fail" = 0 ]
