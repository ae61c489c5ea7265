#!/usr/bin/env bash
# demo.sh: what `make demo` shows: the exact engine deciding the identities parallel plans rely on.
set -u
bin=${1:-build/release/shardproof}
here=$(dirname "$0")
echo "\$ shardproof equiv $here/identities.sq"
"$bin" equiv "$here/identities.sq"
rc=$?
echo "(exit code $rc: 1 means at least one query is NOT equal, each with a certified counterexample)"
[ "$rc" -le 1 ]
