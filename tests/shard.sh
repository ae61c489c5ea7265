#!/usr/bin/env bash
# shard.sh: --shapes N; check --shard I/N on every shard, then merge, must give the report of the whole
# check byte for byte (text and JSON) and the same exit code; merge rejects what it cannot trust.
set -u
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0
bad() { echo "shard: $*"; fail=1; }

# Each comparison runs in the background, JOBS at a time (tests/jobs.sh), in a directory of its
# own; its findings ("shard: ...") and one RUN line per format go to its result file, read back in
# order at the end.
same_as_whole_one() { # FILE N [check options]
    local f=$1 n=$2 d
    shift 2
    d=$(mktemp -d -p "$tmp")
    for fmt in text json; do
        "$bin" check "$f" --no-progress --format $fmt "$@" >"$d/whole" 2>/dev/null
        local want=$?
        local parts=()
        for ((i = 0; i < n; i++)); do
            "$bin" check "$f" --no-progress --shard $i/$n "$@" >"$d/part$i.json" 2>/dev/null
            local rc=$?
            [ $rc = 0 ] || [ $rc = 1 ] || [ $rc = 3 ] || echo "shard: $f shard $i/$n: exit $rc"
            parts+=("$d/part$i.json")
        done
        # the shards in reverse order: merge must not depend on the order
        local rev=()
        for ((i = n - 1; i >= 0; i--)); do rev+=("${parts[$i]}"); done
        "$bin" merge "${rev[@]}" --format $fmt --no-progress >"$d/merged" 2>"$d/err"
        local got=$?
        [ "$got" = "$want" ] || echo "shard: $f ($n shards, $fmt): merge exit $got, whole check $want: $(head -2 "$d/err")"
        cmp -s "$d/whole" "$d/merged" || echo "shard: $f ($n shards, $fmt): merged report differs from the whole check's"
        # merge says on stderr that it trusts the parts' results (helper-25: an edited part)
        grep -qE "as trustworthy as the parts|whole input was checked here" "$d/err" ||
            echo "shard: $f ($n shards, $fmt): merge does not say it takes the parts' results as written"
        echo RUN
    done
    rm -rf "$d"
}
. "$here/jobs.sh"
res=$tmp/res
mkdir -p "$res"
same_as_whole() { jobs_queue "$res" same_as_whole_one "$@"; }

same_as_whole "$here/../docs/examples/llama_layer.sp" 3
same_as_whole "$here/../docs/examples/mlp.sp" 2 --seed 5
same_as_whole "$here/../docs/examples/pipeline_tp.sp" 100
# (a generated plan: --fast-shapes keeps it quick, also under ASan; sharding is what is tested)
same_as_whole "$here/plans/bugs/llama3_eps_all.sp" 4 --fast-shapes
same_as_whole "$here/plans/bugs/mlp_row_allreduce_dropped.sp" 2
# what only a whole check decides after its proofs (the reference executor's run, which no shard
# makes): the real mesh after an unreproduced difference on the cut mesh, the real sizes after
# one at the reduced sizes, a run without inferred relations, stages up to the first failure
# when the inferred lineage is wrong: merge checks the whole input (session 22's review)
same_as_whole "$here/plans/ok/cutoff_unreproduced_real_mesh.sp" 2 --mesh-cutoff
same_as_whole "$here/plans/bugs/definedness_mask_times_division.sp" 2
same_as_whole "$here/plans/ok/reduce_strict_mesh_product_real.sp" 3 --strict-shapes
same_as_whole "$here/plans/bugs/pipeline_grad_reduced_early.sp" 2
# a shard whose check went on at a grown dim or at the real sizes (src/check.c regrow, run_exact):
# its stages are not merge's, merge checks the whole input (session 43)
same_as_whole "$here/plans/bugs/reduce_relation_of_sums.sp" 2
same_as_whole "$here/plans/bugs/relation_shard_rows_removed.sp" 2
# a shard keys only its own stages, so it keeps keys a whole run, past --max-memo-keys, does not:
# merge proves those stages again (the review of 2026-12-04: deepseek3, 87 proved merged, 104 whole)
"$bin" gen deepseek3 --dp 2 --tp 2 --ep 2 --layers 2 -o "$tmp/ds.sp" >/dev/null 2>&1 || bad "gen failed"
same_as_whole "$tmp/ds.sp" 2 --fast-shapes --max-memo-keys 3000
# a generated pipeline: every shard executes only what its stages read (its profile says so)
"$bin" gen llama3 --dp 2 --tp 2 --pp 2 --nm 2 --layers 2 -o "$tmp/gen.sp" >/dev/null 2>&1 ||
    bad "gen failed"
same_as_whole "$tmp/gen.sp" 3
for i in 0 1 2; do
    "$bin" check "$tmp/gen.sp" --no-progress --shard $i/3 --profile >/dev/null 2>"$tmp/prof"
    grep -q "executed what they read" "$tmp/prof" ||
        bad "gen.sp shard $i/3 executed in full: $(grep -- '--shard' "$tmp/prof")"
done
# a layer's backward goes with its forward (src/shard_exec.c group_derived): two shards read
# few sources in common (9% of them on this plan; 22% when the backward was ordered apart)
read=0
for i in 0 1; do
    "$bin" check "$tmp/gen.sp" --no-progress --shard $i/2 --profile >/dev/null 2>"$tmp/prof"
    k= t=
    read -r k t < <(sed -n 's/.*executed what they read (\([0-9]*\) of \([0-9]*\) source.*/\1 \2/p' "$tmp/prof")
    [ -n "$t" ] || bad "gen.sp shard $i/2: no count of the sources read"
    read=$((read + ${k:-0})) total=${t:-1}
done
[ $((100 * read)) -le $((115 * total)) ] ||
    bad "gen.sp: the two shards read $read source tensors of $total (more than 115%)"

# merge refuses: a missing shard, a shard twice, a changed input, other options, not a report
f=$here/../docs/examples/mlp.sp
cp "$f" "$tmp/in.sp"
"$bin" check "$tmp/in.sp" --shard 0/2 >"$tmp/a.json" 2>/dev/null
"$bin" check "$tmp/in.sp" --shard 1/2 >"$tmp/b.json" 2>/dev/null
"$bin" check "$tmp/in.sp" --shard 1/2 --seed 9 >"$tmp/c.json" 2>/dev/null
expect_error() { # MESSAGE merge-args...
    local msg=$1; shift
    "$bin" merge "$@" >/dev/null 2>"$tmp/err"
    local rc=$?
    [ $rc = 2 ] || bad "merge $*: exit $rc, expected 2"
    grep -q -- "$msg" "$tmp/err" || bad "merge $*: expected '$msg', got: $(cat "$tmp/err")"
    runs=$((runs + 1))
}
expect_error "shard 1/2 is missing" "$tmp/a.json"
expect_error "is also in" "$tmp/a.json" "$tmp/a.json"
expect_error "not the same run" "$tmp/a.json" "$tmp/c.json"
echo '{"format": "shardproof-partial", "format": 1}' >"$tmp/dup.json"
expect_error "duplicate" "$tmp/dup.json"
echo '{"format": "other"}' >"$tmp/other.json"
expect_error "not a partial report" "$tmp/other.json"
expect_error "partial reports" --format text
echo "# edited" >>"$tmp/in.sp"
expect_error "the file changed since" "$tmp/a.json" "$tmp/b.json"
# a part edited to claim a failing stage proved: merge trusts the parts' results (docs/guide.md),
# and where the reference executor runs it contradicts them; the parts checked reduced sizes, so
# the whole input is checked at the real sizes (src/crosscheck.c, as a single run does): the
# verdict is the true one and stderr says the whole input was checked
g=$here/plans/bugs/mlp_row_allreduce_dropped.sp
for i in 0 1; do
    "$bin" check "$g" --shard $i/2 2>/dev/null | sed 's/"status": "failed"/"status": "proved"/' |
        grep -vE '"(why|fail_rank|fail_index|plan_value|model_value|cex|cex_values|reason)"' |
        tr -d '\n' | sed 's/"fail_shape": *\[[^]]*\],\{0,1\}//g; s/, *}/}/g' >"$tmp/e$i.json"
done
"$bin" merge "$tmp/e0.json" "$tmp/e1.json" >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] || bad "merge of an edited part: exit $rc, expected 1: $(head -2 "$tmp/err")"
grep -q "the whole input was checked here" "$tmp/err" ||
    bad "merge of an edited part: no message on stderr: $(head -2 "$tmp/err")"
runs=$((runs + 1))
"$bin" check "$f" --shard 2/2 >/dev/null 2>&1
[ $? = 2 ] || bad "--shard 2/2 accepted"
"$bin" check "$f" --shard 0/2 --format json >/dev/null 2>&1
[ $? = 2 ] || bad "--shard with --format accepted"

# --shapes N: N reductions in turn; all EQUIVALENT for a correct plan, the first failing one for a bug
out=$("$bin" check "$here/../docs/examples/llama_layer.sp" --shapes 2 --no-progress 2>&1)
rc=$?
[ $rc = 0 ] || bad "--shapes 2 on llama_layer.sp: exit $rc"
echo "$out" | grep -q "EQUIVALENT at all 2 shapes" || bad "--shapes 2: no closing line"
[ "$(echo "$out" | grep -c '^reduced dims:')" = 2 ] || bad "--shapes 2: expected 2 reports"
[ "$(echo "$out" | grep '^reduced dims:' | sort -u | wc -l)" = 2 ] || bad "--shapes 2: the two reductions are the same"
"$bin" check "$here/plans/bugs/llama3_attn_scale_all.sp" --shapes 2 --fast-shapes --no-progress >/dev/null 2>&1
[ $? = 1 ] || bad "--shapes 2 on a bug plan: not NOT EQUIVALENT"
runs=$((runs + 2))

wait
for r in "$res"/*; do
    [ -e "$r" ] || continue
    runs=$((runs + $(grep -c '^RUN$' "$r")))
    if grep -q '^shard: ' "$r"; then
        grep '^shard: ' "$r"
        fail=1
    fi
done
echo "shard: $runs checks; $([ $fail = 0 ] && echo passed || echo FAILED)"
[ $fail = 0 ]
