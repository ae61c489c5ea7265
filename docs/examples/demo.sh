#!/usr/bin/env bash
# demo.sh: what `make demo` shows: a DP x TP plan proven equivalent, a buggy variant refuted with
# a certified counterexample, and the engine on the identities parallel plans rely on.
set -u
bin=${1:-build/release/shardproof}
here=$(dirname "$0")
root=$here/../..
show() { echo; echo "\$ shardproof $*"; "$bin" "$@"; echo "(exit code $?)"; }
show check "$here/mlp.sp" --no-progress
show check "$root/tests/plans/bugs/mlp_row_allreduce_dropped.sp" --no-progress
show equiv "$here/identities.sq"
exit 0
