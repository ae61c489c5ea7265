#!/usr/bin/env bash
# embed.sh: the library as a user embeds it: `make install DESTDIR=tmp`, then a program built with
# `pkg-config --cflags --libs shardproof` alone (the shared library; no --static) reads a check's
# results as data (docs/examples/embed.c); only the public header is installed, the man page
# too; a static link through `pkg-config --static` works as well.
# Environment: MAKE (default make), MODE (release), EMBED_CFLAGS (the sanitizers of MODE=asan).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0
bad() { echo "embed: $*"; fail=1; }
cd "$root" || exit 1
prefix=/usr/local
if ! ${MAKE:-make} -s install DESTDIR="$tmp" PREFIX=$prefix MODE="${MODE:-release}" >"$tmp/log" 2>&1; then
    echo "embed: make install failed:"; tail -5 "$tmp/log"; exit 1
fi
inst=$tmp$prefix
[ "$(ls "$inst/include")" = shardproof.h ] || bad "include/ holds more than shardproof.h: $(ls "$inst/include")"
[ -s "$inst/share/man/man1/shardproof.1" ] || bad "the man page is not installed"
[ -x "$inst/bin/shardproof" ] || bad "the CLI is not installed"
[ -L "$inst/lib/libshardproof.so" ] && [ -e "$inst/lib/libshardproof.so.0" ] || bad "libshardproof.so and its soname link are not installed"
export PKG_CONFIG_PATH=$inst/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$tmp
flags=$(pkg-config --cflags --libs shardproof) || { echo "embed: pkg-config does not know shardproof"; exit 1; }
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror docs/examples/embed.c $flags ${EMBED_CFLAGS:-} -o "$tmp/embed" ||
    { echo "embed: docs/examples/embed.c does not build with: $flags"; exit 1; }
readelf -d "$tmp/embed" | grep -q 'NEEDED.*libshardproof\.so\.0' || bad "embed is not linked to libshardproof.so.0"

run() { # WANT-EXIT FILE PATTERN...
    local want=$1 file=$2
    shift 2
    LD_LIBRARY_PATH=$inst/lib "$tmp/embed" "$file" >"$tmp/out" 2>&1
    local rc=$?
    runs=$((runs + 1))
    [ $rc = "$want" ] || bad "embed $file: exit $rc, expected $want: $(head -3 "$tmp/out")"
    for p in "$@"; do
        grep -qE -- "$p" "$tmp/out" || bad "embed $file: no '$p' in: $(cat "$tmp/out")"
    done
}
run 0 docs/examples/mlp.sp "^shardproof [0-9.]+: EQUIVALENT$" "^stages: 9, proved or memoized: 9$"
(cd tests/plans/bugs && LD_LIBRARY_PATH=$inst/lib "$tmp/embed" mlp_row_allreduce_dropped.sp >"$tmp/bug" 2>&1)
[ $? = 1 ] || bad "embed on a bug plan: not exit 1"
for p in "^failed stage 3: plan 'y' \(line 30\) ~ model 'y' \(line 14\)" "^rank 0: dp=0 tp=0$" \
    "^element: 0 0$" "^input y\.part0@3\[0,0\] = -2$" "^there: plan = -2, model = 0 \(exact\)$"; do
    grep -qE -- "$p" "$tmp/bug" || bad "embed on a bug plan: no '$p' in: $(cat "$tmp/bug")"
done
runs=$((runs + 1))
run 2 tests/plans/bad/syntax_missing_rparen.sp "^diagnostic: .*syntax_missing_rparen.sp:7:19: expected '\)', found end of line \[syntax\]$"

# a static link through pkg-config --static (Libs.private, Requires.private)
sflags=$(pkg-config --static --cflags --libs shardproof)
# shellcheck disable=SC2086
if cc -std=c11 docs/examples/embed.c -static-libgcc -Wl,-Bstatic -lshardproof -Wl,-Bdynamic \
    $(echo " $sflags" | sed 's/ -lshardproof//') ${EMBED_CFLAGS:-} -o "$tmp/embed_static" 2>"$tmp/log"; then
    "$tmp/embed_static" docs/examples/mlp.sp >/dev/null 2>&1 || bad "the statically linked embed fails"
else
    bad "no static link with pkg-config --static: $(head -3 "$tmp/log")"
fi
runs=$((runs + 1))

echo "embed: $runs runs; $([ $fail = 0 ] && echo passed || echo FAILED)"
[ $fail = 0 ]
