#!/usr/bin/env bash
# run_plans.sh: run the plan corpora with their expected verdicts.
#   tests/plans/ok/*.sp and docs/examples/*.sp   EQUIVALENT (exit 0), unless the file says otherwise
#   tests/plans/bugs/*.sp   '# expect: NOT EQUIVALENT at line N' (exit 1, first failing plan line N)
#   tests/plans/bad/*.sp    '# expect: FILE:L:C: error: MSG' (exit 2, that exact first diagnostic),
#                           run from inside tests/plans/bad so FILE is the bare name
#   tests/plans/regress/*.sp  like bad/ or ok/, by their expect line; '# expect: UNKNOWN' is
#                           exit 3, and '# expect: UNKNOWN: TEXT' also wants 'reason: TEXT...'
#                           in the report
# A line '# args: ...' adds command-line options for that file.
# The generated files (llama3_*.sp, deepseek3_*.sp: tests/gen_matrix.sh writes them) run with
# --fast-shapes where they are planted bugs (a difference is found the same way, at smaller
# sizes), and, in a sanitizer build (MODE=asan), also where they are equivalent: there an
# UNKNOWN that --fast-shapes gives for want of a proof, with no differing or undecided stage,
# passes (the default's sizes take minutes under ASan; the release run proves them).
# With VALGRIND=1 every run goes through valgrind (zero errors, zero leaks).
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
pass=0
fail=0
run() { # dir file args...
    local dir=$1 file=$2
    shift 2
    if [ "${VALGRIND:-0}" = 1 ]; then
        (cd "$dir" && valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            "$bin" check "$file" --no-progress "$@")
    else
        (cd "$dir" && "$bin" check "$file" --no-progress "$@")
    fi
}
check_one() { # kind path
    local kind=$1 path=$2 dir file expect out err rc
    dir=$(dirname "$path")
    file=$(basename "$path")
    expect=$(grep -a -m1 '^# expect:' "$path" | sed 's/^# expect: *//')
    local args fast=""
    args=$(grep -a -m1 '^# args:' "$path" | sed 's/^# args: *//')
    case $file in
    llama3_*.sp | deepseek3_*.sp)
        if [ "$kind" = bugs ] || [ "${MODE:-release}" = asan ]; then fast=--fast-shapes; fi ;;
    esac
    out=$(mktemp)
    err=$(mktemp)
    local t0=$SECONDS
    # shellcheck disable=SC2086
    run "$dir" "$file" $fast $args >"$out" 2>"$err"
    rc=$?
    echo "$((SECONDS - t0)) ${path#"$root"/}" >>"$res/times"
    local ok=1 why=""
    if [ "$rc" = 99 ]; then
        ok=0; why="valgrind reported errors"
    elif [ "$kind" = bad ] || [[ "$expect" == *": error: "* ]]; then
        if [ "$rc" != 2 ]; then ok=0; why="exit $rc, expected 2"; fi
        if ! grep -aqxF -- "$expect" "$err"; then ok=0; why="$why; diagnostic '$expect' not printed (got: $(head -1 "$err"))"; fi
    elif [[ "$expect" == "NOT EQUIVALENT at line "* ]]; then
        local line=${expect#NOT EQUIVALENT at line }
        if [ "$rc" != 1 ]; then ok=0; why="exit $rc, expected 1"; fi
        if ! grep -q "^  plan line:   $file:$line:" "$out"; then ok=0; why="$why; first failing plan line is not $line: $(grep 'plan line' "$out")"; fi
    elif [ "$expect" = "UNKNOWN" ] || [[ "$expect" == "UNKNOWN: "* ]]; then
        if [ "$rc" != 3 ]; then ok=0; why="exit $rc, expected 3"; fi
        local reason=${expect#UNKNOWN}
        reason=${reason#: }
        if [ -n "$reason" ] && ! grep -aqF -- "reason: $reason" "$out"; then
            ok=0; why="$why; no 'reason: $reason' (got: $(grep -a -m1 '^reason' "$out"))"
        fi
    elif [ -n "$fast" ] && [ "$rc" = 3 ] && grep -q '^(--fast-shapes: ' "$out" &&
        grep -q '^summary: .* 0 failed, 0 unknown;' "$out"; then
        : # no difference under --fast-shapes, no proof (above)
    else
        if [ "$rc" != 0 ]; then ok=0; why="exit $rc, expected 0 (EQUIVALENT)"; fi
    fi
    if [ $ok = 1 ]; then
        echo PASS
    else
        echo "FAIL $path: $why"
        sed 's/^/    /' "$err" | head -5
    fi
    rm -f "$out" "$err"
}
# The files run JOBS at a time (tests/jobs.sh), each into its own result file; the results are
# read back in the files' order, so the output does not depend on JOBS.
. "$root/tests/jobs.sh"
res=$(mktemp -d)
trap 'rm -rf "$res"' EXIT
queue() { jobs_queue "$res" check_one "$1" "$2"; } # kind path
for f in "$root"/docs/examples/*.sp "$root"/tests/plans/ok/*.sp; do [ -e "$f" ] && queue ok "$f"; done
for f in "$root"/tests/plans/bugs/*.sp; do [ -e "$f" ] && queue bugs "$f"; done
for f in "$root"/tests/plans/bad/*.sp; do [ -e "$f" ] && queue bad "$f"; done
for f in "$root"/tests/plans/regress/*.sp; do [ -e "$f" ] && queue regress "$f"; done
wait
for r in "$res"/[0-9]*; do
    if [ "$(head -1 "$r")" = PASS ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        cat "$r"
    fi
done
echo "plans: $pass passed, $fail failed"
# where the time goes (wall seconds per file, the slowest; CI's budget is 30 minutes)
echo "plans: slowest: $(sort -rn "$res/times" 2>/dev/null | head -12 | awk '{printf "%s%s %ss", (NR > 1 ? ", " : ""), $2, $1}')"
[ "$fail" = 0 ]
