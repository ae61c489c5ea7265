#!/usr/bin/env bash
# gen_matrix.sh: the test matrix of `shardproof gen` (llama3 and deepseek3).
#   - every parallelism alone and combined, and every harmless --variant, must verify EQUIVALENT
#     (exit 0) - those in the list 'proved' with the default shape reduction, the others under
#     --fast-shapes with no differing or undecided stage (exit 0, or 3 when its sizes are no
#     proof at the real sizes);
#   - every planted bug (--bug NAME) must be NOT EQUIVALENT (exit 1; 'proved_bugs' by default,
#     the others under --fast-shapes) with the first failing plan
#     line the one its '# expect: NOT EQUIVALENT at line N' header announces, or, for a bug that
#     makes the plan ill-formed, exit 2 with exactly the diagnostic its '# expect:' announces;
#   - the generated corpus files (tests/plans/ok/llama3_*.sp, tests/plans/bugs/llama3_*.sp) must
#     be what the generator writes now (run with --update to rewrite them).
# usage: tests/gen_matrix.sh [SHARDPROOF] [--update]     (default build/release/shardproof)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build/release/shardproof
update=0
for a in "$@"; do
    case $a in
    --update) update=1 ;;
    *) bin=$(cd "$(dirname "$a")" && pwd)/$(basename "$a") ;;
    esac
done
if ! "$bin" gen llama3 --help >/dev/null 2>&1; then
    echo "gen_matrix: '$bin gen' is not available (is sp_gen_main wired into src/main.c?)" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

# ---- configurations that must verify EQUIVALENT (all --preset 8b, --layers 2 unless given)
equiv=(
    "--dp 2"
    "--tp 2"
    "--tp 2 --sp"
    "--pp 2 --nm 2"
    "--nm 2"
    "--dp 2 --tp 2 --pp 2 --nm 2"
    "--dp 2 --tp 2 --sp --pp 2 --nm 2"
    "--tp 4"
    "--pp 2 --layers 3"
    "--pp 4 --nm 2 --layers 4"
    "--dp 2 --tp 2 --optim adam"
    "--preset 70b --tp 2 --sp --pp 2"
    "--preset 405b --tp 2 --pp 2 --nm 2"
    "--dp 2 --optim adam --zero 1"
    "--dp 2 --tp 2 --optim adam --zero 2 --clip 1.0"
    "--dp 2 --tp 2 --sp --pp 2 --nm 2 --optim adam --zero 3"
    "--dp 2 --optim adam --zero 3 --clip 1.0"
    "--dp 2 --nm 2 --clip 1.0"
    "--tp 2 --pp 2 --vpp 2 --layers 4 --clip 1.0 --tied"
    "--dp 2 --pp 2 --nm 2 --clip 1.0 --optim adam --zero 3"
    "--dp 2 --optim adam --zero 2 --variant zero2_allreduce"
    "--pp 2 --vpp 2 --layers 4"
    "--dp 2 --tp 2 --pp 2 --vpp 2 --nm 2 --layers 4"
    "--pp 2 --grad-accum 2"
    "--tp 2 --pp 2 --layers 4 --partition 1,3"
    "--pp 2 --layers 4 --variant unbalanced_partition"
    "--dp 2 --nm 2 --loss-mask --label-smoothing 0.1"
    "--dp 2 --tp 2 --pp 2 --nm 2 --tied --loss-mask"
    "--tp 2 --sp --freeze wout,wq"
    "--cp 2"
    "--cp 2 --tp 2"
    "--cp 2 --tp 2 --sp --loss-mask"
    "--cp 2 --tp 2 --pp 2 --nm 2"
    "--dp 2 --cp 2 --optim adam --zero 2"
    "deepseek3"
    "deepseek3 --dp 2 --ep 2 --tp 2"
    "deepseek3 --dp 2 --ep 2 --score sigmoid"
    "deepseek3 --tp 2 --sp --nm 2 --optim adam"
    "deepseek3 --preset 671b --layers 4 --ep 2"
    "deepseek3 --dp 2 --ep 2 --tp 2 --pp 2"
    "deepseek3 --pp 2 --vpp 2 --layers 4 --ep 2"
    "deepseek3 --dp 2 --ep 4"
    "deepseek3 --dp 2 --ep 2 --optim adam --zero 1"
    "deepseek3 --dp 2 --ep 2 --optim adam --zero 3"
    "deepseek3 --dp 2 --ep 2 --clip 1.0"
    "deepseek3 --cp 2 --ep 2"
    "deepseek3 --dp 2 --ep 2 --loss-mask --label-smoothing 0.1 --tied --freeze wr"
    "deepseek3 --cp 2 --tp 2 --sp --pp 2 --nm 2"
    "--dp 2 --variant single_rank_collective"
    "--pp 2 --nm 2 --schedule 1f1b"
    "--pp 2 --nm 4 --schedule 1f1b"
    "--dp 2 --tp 2 --pp 2 --nm 2 --schedule 1f1b"
    "--pp 4 --nm 3 --layers 4 --schedule 1f1b"
    "--nm 3 --dp 2 --loss-mask --label-smoothing 0.1 --schedule 1f1b"
    "--dp 2 --tp 2 --pp 2 --nm 2 --tied --loss-mask --schedule 1f1b"
    "--dp 2 --tp 2 --sp --pp 2 --nm 2 --optim adam --zero 3 --clip 1.0 --schedule 1f1b"
    "--cp 2 --cp-algo ring"
    "--cp 4 --cp-algo ring"
    "--cp 2 --tp 2 --cp-algo ring"
    "--cp 2 --tp 2 --sp --loss-mask --cp-algo ring"
    "--cp 2 --tp 2 --pp 2 --nm 2 --cp-algo ring --schedule 1f1b"
    "deepseek3 --cp 2 --ep 2 --cp-algo ring"
    "--dp 2 --nm 2 --mb-axis"
    "--dp 2 --tp 2 --pp 2 --nm 2 --mb-axis"
    "--dp 2 --nm 2 --mb-axis --loss-mask --label-smoothing 0.1"
    "--cp 2 --tp 2 --nm 2 --mb-axis"
    "deepseek3 --nm 2 --mb-axis"
)
# the configurations checked with the default shape reduction (a proof at the real sizes); the
# others run with --fast-shapes, whose smaller sizes make the matrix affordable in `make check`
# and which says UNKNOWN instead of EQUIVALENT where its sizes are no proof (docs/soundness.md):
# for them the matrix asserts that no stage differs and none is undecided
proved=(
    "--dp 2" "--tp 2" "--tp 2 --sp" "--pp 2 --nm 2" "--nm 2" "--dp 2 --tp 2 --pp 2 --nm 2"
    "--tp 4" "--pp 2 --layers 3" "--pp 4 --nm 2 --layers 4" "--dp 2 --optim adam --zero 1"
    "--cp 2" "--cp 2 --tp 2" "deepseek3" "--dp 2 --nm 2 --clip 1.0" "--dp 2 --nm 2 --mb-axis"
)
is_proved() {
    local p
    for p in "${proved[@]}"; do [ "$p" = "$1" ] && return 0; done
    return 1
}
# an entry may start with a family name (default llama3)
family() { case $1 in deepseek3*) echo deepseek3 ;; *) echo llama3 ;; esac; }
# The checks run JOBS at a time (tests/jobs.sh), each in its own directory and into its own
# result file, read back in the lists' order: the output does not depend on JOBS (but for the
# times).
. "$root/tests/jobs.sh"
mkdir -p "$tmp/res"
queue() { # function args...: run it in the background, with a directory of its own
    local d=$tmp/job$((jobs_n + 1))
    mkdir -p "$d"
    jobs_queue "$tmp/res" "$@" "$d"
}
results() { # count and print the results queued so far
    wait
    local r
    for r in "$tmp"/res/*; do
        [ -e "$r" ] || continue
        if grep -q '^FAIL ' "$r"; then fail=$((fail + 1)); else pass=$((pass + 1)); fi
        cat "$r"
        rm -f "$r"
    done
}
equiv_one() { # cfg dir
    local cfg=$1 d=$2 fam args mode t0 rc
    fam=$(family "$cfg")
    args="--layers 2 ${cfg#deepseek3}"
    mode=--fast-shapes
    if is_proved "$cfg"; then mode=--strict-shapes; fi
    t0=$(now)
    # shellcheck disable=SC2086
    if ! "$bin" gen "$fam" $args >"$d/plan.sp" 2>"$d/err"; then
        echo "FAIL gen $fam $args: $(head -1 "$d/err")"
        return
    fi
    "$bin" check "$d/plan.sp" --no-progress $mode >"$d/out" 2>&1
    rc=$?
    if [ $rc = 0 ]; then
        printf 'ok   %-44s EQUIVALENT       %6ss\n' "$cfg" "$(elapsed "$t0")"
    elif [ $mode = --fast-shapes ] && [ $rc = 3 ] && grep -q '^(--fast-shapes: ' "$d/out" &&
        grep -q '^summary: .* 0 failed, 0 unknown;' "$d/out"; then
        printf 'ok   %-44s no difference (fast) %6ss\n' "$cfg" "$(elapsed "$t0")"
    else
        echo "FAIL $cfg ($mode): exit $rc, expected 0 (EQUIVALENT)$([ $mode = --fast-shapes ] && echo ' or 3 (UNKNOWN, --fast-shapes)'): $(grep -m1 -E '^(NOT EQUIVALENT|UNKNOWN)|error' "$d/out")"
    fi
}
nproved=0
for cfg in "${equiv[@]}"; do
    if is_proved "$cfg"; then nproved=$((nproved + 1)); fi
    queue equiv_one "$cfg"
done
results
if [ "$nproved" != "${#proved[@]}" ]; then
    bad "the list 'proved' names a configuration that is not in 'equiv'"
fi

# ---- planted bugs: NOT EQUIVALENT at the announced line
big="--dp 2 --tp 2 --pp 2 --nm 2"
spbig="--dp 2 --tp 2 --sp --pp 2 --nm 2"
bugs=(
    "tp_allreduce_identity|$big"
    "tp_allreduce_identity|$spbig"
    "tp_allgather_instead|$big"
    "bwd_allreduce_identity|$big"
    "bwd_allreduce_identity|$spbig"
    "pp_wrong_peer|$big"
    "pp_wrong_peer|$spbig"
    "pp_wrong_peer|--tp 2 --pp 2 --vpp 2 --layers 4"
    "pp_allreduce_instead|$big"
    "eps_one_rank|$big"
    "eps_one_rank|--dp 2"
    "pow1|$big"
    "pow1|$spbig"
    "eps_all|$big"
    "attn_scale_one_rank|$big"
    "attn_scale_all|$big"
    "grad_early|$big"
    "grad_early|--nm 2"
    "sp_norm_grad_not_reduced|$spbig"
    "fanout_extra_copy|$big"
    "loss_mean_per_microbatch|$big"
    "loss_mean_per_microbatch|--dp 2"
    "loss_mean_per_microbatch|--dp 2 --nm 2 --loss-mask"
    "loss_mean_per_microbatch|$big --loss-mask --label-smoothing 0.1 --tied"
    "tp_allreduce_dropped|--tp 2"
    "tp_allreduce_dropped|--dp 2 --tp 2 --sp --pp 2"
    "loss_mean_per_microbatch|--dp 2 --nm 2 --mb-axis"
    "pp_wrong_peer|$big --mb-axis"
    "tp_allreduce_identity|$big --mb-axis"
    "eps_one_rank|--dp 2 --nm 2 --mb-axis"
    "rope_grad_swapped|$big"
    "rope_grad_swapped|--dp 2"
    "frozen_input_grad_not_reduced|--tp 2 --freeze wout"
    "frozen_input_grad_not_reduced|$spbig --freeze wout"
    "cp_rope_local_positions|--cp 2 --tp 2"
    "cp_causal_offset_local|--cp 2 --tp 2"
    "cp_causal_offset_local|--dp 2 --cp 2 --pp 2 --nm 2"
    "tp_allreduce_identity|--cp 2 --tp 2 --sp"
    "expert_grad_not_scaled|deepseek3 --dp 2 --ep 2"
    "expert_grad_not_scaled|deepseek3 --dp 2 --ep 2 --tp 2 --score sigmoid"
    "bwd_allreduce_identity|deepseek3 --dp 2 --ep 2 --tp 2"
    "expert_grad_not_scaled|deepseek3 --dp 2 --ep 2 --pp 2"
    "grad_early|$big --schedule 1f1b"
    "grad_early|--nm 2 --schedule 1f1b"
    "pp_wrong_peer|$big --schedule 1f1b"
    "loss_mean_per_microbatch|--dp 2 --nm 2 --loss-mask --schedule 1f1b"
    "tp_allreduce_identity|$spbig --schedule 1f1b"
    "cp_causal_offset_local|--cp 2 --tp 2 --cp-algo ring"
    "attn_scale_one_rank|--cp 2 --tp 2 --cp-algo ring"
    "attn_scale_all|--cp 2 --nm 2 --cp-algo ring"
)
# planted bugs found with the default shape reduction; the others with --fast-shapes (a
# difference is reported the same way in both modes, and the fast sizes are smaller)
proved_bugs=(
    "eps_one_rank|--dp 2" "grad_early|--nm 2" "loss_mean_per_microbatch|--dp 2"
    "rope_grad_swapped|--dp 2" "tp_allreduce_dropped|--tp 2" "cp_causal_offset_local|--cp 2 --tp 2"
)
is_proved_bug() {
    local p
    for p in "${proved_bugs[@]}"; do [ "$p" = "$1" ] && return 0; done
    return 1
}
bug_one() { # entry dir
    local entry=$1 d=$2 mode b cfg fam args t0 expect rc line got
    mode=--fast-shapes
    if is_proved_bug "$entry"; then mode=--strict-shapes; fi
    b=${entry%%|*}
    cfg=${entry#*|}
    fam=$(family "$cfg")
    args="--layers 2 ${cfg#deepseek3} --bug $b"
    t0=$(now)
    # shellcheck disable=SC2086
    if ! "$bin" gen "$fam" $args -o "$d/bug.sp" 2>"$d/err"; then
        echo "FAIL gen $fam $args: $(head -1 "$d/err")"
        return
    fi
    expect=$(grep -m1 '^# expect: ' "$d/bug.sp" | sed 's/^# expect: //')
    (cd "$d" && "$bin" check bug.sp --no-progress $mode) >"$d/out" 2>"$d/err"
    rc=$?
    if [[ "$expect" == *": error: "* ]]; then
        # a bug that makes the plan ill-formed: exit 2 with exactly the announced diagnostic
        if [ $rc = 2 ] && [ "$(head -1 "$d/err")" = "$expect" ]; then
            printf 'ok   %-24s %-32s error %-11s %6ss\n' "$b" "$cfg" "${expect#bug.sp:}" "$(elapsed "$t0")"
        else
            echo "FAIL $b ($cfg): exit $rc (expected 2), first diagnostic '$(head -1 "$d/err")' (expected '$expect')"
        fi
        return
    fi
    line=${expect#NOT EQUIVALENT at line }
    got=$(grep -m1 '^  plan line:' "$d/out" | sed 's/.*bug\.sp:\([0-9]*\):.*/\1/')
    if [ $rc = 1 ] && [ -n "$line" ] && [ "$got" = "$line" ]; then
        printf 'ok   %-24s %-32s NOT EQ. line %-4s %6ss\n' "$b" "$cfg" "$line" "$(elapsed "$t0")"
    else
        echo "FAIL $b ($cfg): exit $rc (expected 1), failing line '$got' (expected '$line')"
    fi
}
for entry in "${bugs[@]}"; do
    queue bug_one "$entry"
done
results

# ---- meshes gen accepts (TrainVerify's Table 3, generated only: checking them is bench/table3)
# and refuses (exit 2 with the message): the mesh is bounded by the checker's default --max-ranks
accepted=(
    "--preset 8b --dp 512 --batch 512|mesh dp = 512"
    "--preset 405b --dp 64 --tp 8 --pp 16 --nm 16 --batch 1024|mesh pp = 16, dp = 64, tp = 8"
    "deepseek3 --preset 671b --dp 32 --tp 8 --pp 8 --nm 16 --batch 512|mesh pp = 8, dp = 32, tp = 8"
    "deepseek3 --preset 671b --dp 8 --ep 4 --tp 8 --pp 8 --batch 32|mesh pp = 8, dp = 8, ep = 4, tp = 8"
    "--dp 4096 --tp 8 --pp 2 --layers 2|mesh pp = 2, dp = 4096, tp = 8"
)
for entry in "${accepted[@]}"; do
    cfg=${entry%%|*}
    want=${entry#*|}
    fam=$(family "$cfg")
    # shellcheck disable=SC2086
    if "$bin" gen "$fam" ${cfg#deepseek3} >"$tmp/acc.sp" 2>"$tmp/err" && grep -qx " *$want" "$tmp/acc.sp"; then
        pass=$((pass + 1))
        printf 'ok   gen %-52s %s\n' "$cfg" "$want"
    else
        bad "gen $fam ${cfg#deepseek3}: expected exit 0 and the line '$want': $(head -1 "$tmp/err")"
    fi
done
refused=(
    "--dp 4096 --tp 8 --pp 4 --layers 4|the mesh dp * ep * cp * tp * pp = 131072 ranks exceeds 65536 (the checker's default --max-ranks)"
    "deepseek3 --dp 8192 --ep 4 --tp 4|the mesh dp * ep * cp * tp * pp = 131072 ranks exceeds 65536 (the checker's default --max-ranks)"
    "--dp 65536 --cp 2|the mesh dp * ep * cp * tp * pp = 131072 ranks exceeds 65536 (the checker's default --max-ranks)"
    "--nm 65|--nm must be between 1 and 64"
    "--pp 2 --grad-accum 65|--grad-accum must be between 1 and 64"
    "deepseek3 --dp 2 --bug expert_grad_not_scaled|bug 'expert_grad_not_scaled' needs --dp >= 2 and --ep >= 2"
)
for entry in "${refused[@]}"; do
    cfg=${entry%%|*}
    want="shardproof: error: ${entry#*|}"
    fam=$(family "$cfg")
    # shellcheck disable=SC2086
    "$bin" gen "$fam" ${cfg#deepseek3} >"$tmp/ref.sp" 2>"$tmp/err"
    rc=$?
    if [ $rc = 2 ] && [ "$(cat "$tmp/err")" = "$want" ] && [ ! -s "$tmp/ref.sp" ]; then
        pass=$((pass + 1))
        printf 'ok   gen %-52s refused\n' "$cfg"
    else
        bad "gen $fam ${cfg#deepseek3}: exit $rc, expected 2 with '$want', got '$(head -1 "$tmp/err")'"
    fi
done

# ---- the generated corpus files
corpus=(
    "ok/llama3_dp2_tp2_pp2_nm2.sp|--dp 2 --tp 2 --pp 2 --nm 2"
    "bugs/llama3_tp_allreduce_identity.sp|--tp 2 --bug tp_allreduce_identity"
    "bugs/llama3_tp_allgather_instead.sp|--tp 2 --bug tp_allgather_instead"
    "bugs/llama3_bwd_allreduce_identity.sp|--tp 2 --sp --bug bwd_allreduce_identity"
    "bugs/llama3_pp_allreduce_instead.sp|--tp 2 --pp 2 --bug pp_allreduce_instead"
    "bugs/llama3_pp_wrong_peer.sp|--tp 2 --pp 2 --bug pp_wrong_peer"
    "bugs/llama3_eps_one_rank.sp|--tp 2 --bug eps_one_rank"
    "bugs/llama3_pow1.sp|--tp 2 --sp --bug pow1"
    "bugs/llama3_eps_all.sp|--dp 2 --bug eps_all"
    "bugs/llama3_attn_scale_one_rank.sp|--tp 2 --bug attn_scale_one_rank"
    "bugs/llama3_attn_scale_all.sp|--tp 2 --bug attn_scale_all"
    "bugs/llama3_grad_early.sp|--dp 2 --pp 2 --nm 2 --bug grad_early"
    "bugs/llama3_sp_norm_grad_not_reduced.sp|--tp 2 --sp --bug sp_norm_grad_not_reduced"
    "bugs/llama3_fanout_extra_copy.sp|--tp 2 --bug fanout_extra_copy"
    "bugs/llama3_loss_mean_per_microbatch.sp|--dp 2 --nm 2 --bug loss_mean_per_microbatch"
    "bugs/llama3_tp_allreduce_dropped.sp|--tp 2 --bug tp_allreduce_dropped"
    "bugs/llama3_rope_grad_swapped.sp|--tp 2 --bug rope_grad_swapped"
    "bugs/llama3_frozen_input_grad_not_reduced.sp|--tp 2 --freeze wout --bug frozen_input_grad_not_reduced"
    "bugs/llama3_loss_mean_masked.sp|--dp 2 --nm 2 --loss-mask --bug loss_mean_per_microbatch"
    "bugs/llama3_cp_rope_local_positions.sp|--cp 2 --tp 2 --bug cp_rope_local_positions"
    "bugs/llama3_cp_causal_offset_local.sp|--cp 2 --bug cp_causal_offset_local"
    "gen/deepseek3_dp2_ep2_tp2.sp|deepseek3 --dp 2 --ep 2 --tp 2"
    "bugs/deepseek3_expert_grad_not_scaled.sp|deepseek3 --dp 2 --ep 2 --bug expert_grad_not_scaled"
    "bugs/llama3_variant_unbalanced_partition.sp|--pp 2 --layers 4 --variant unbalanced_partition"
    "bugs/llama3_variant_single_rank_collective.sp|--dp 2 --variant single_rank_collective"
    "ok/llama3_dp2_tp2_pp2_nm2_1f1b.sp|--dp 2 --tp 2 --pp 2 --nm 2 --schedule 1f1b"
    "ok/llama3_cp2_tp2_ring.sp|--cp 2 --tp 2 --cp-algo ring"
    "bugs/llama3_grad_early_1f1b.sp|--dp 2 --pp 2 --nm 2 --schedule 1f1b --bug grad_early"
    "bugs/llama3_variant_zero2_allreduce.sp|--dp 2 --tp 2 --optim adam --zero 2 --variant zero2_allreduce"
)
for entry in "${corpus[@]}"; do
    f=$root/tests/plans/${entry%%|*}
    cfg=${entry#*|}
    fam=$(family "$cfg")
    args="--layers 2 ${cfg#deepseek3}"
    # shellcheck disable=SC2086
    gf=$tmp/$(basename "$f") # the same name: an expected diagnostic names the file
    if ! "$bin" gen "$fam" $args -o "$gf" 2>"$tmp/err"; then
        bad "gen $fam $args: $(head -1 "$tmp/err")"
        continue
    fi
    if [ $update = 1 ]; then
        cp "$gf" "$f"
        echo "wrote ${f#"$root"/}"
        pass=$((pass + 1))
    elif cmp -s "$gf" "$f"; then
        pass=$((pass + 1))
    else
        bad "${f#"$root"/} is not what 'shardproof gen $fam $args' writes (tests/gen_matrix.sh --update)"
    fi
done

echo "gen matrix: $pass passed, $fail failed"
[ "$fail" = 0 ]
