#!/usr/bin/env bash
# run.sh: the PyTorch capture examples with their expected verdicts (make check).
#   tests/torch/*.py with a '# Run: shardproof check --torch FILE --world N' line: EQUIVALENT
#   tests/torch/bug_*.py: '# expect: NOT EQUIVALENT at FILE.py:LINE' (exit 1, and the report's
#   first failing plan line carries that Python origin); the world comes from the example
#   the bug file imports (its '# Run:' line)
#   tests/torch/bad_*.py: '# expect: error: TEXT' (exit 2, TEXT in the message)
#   tests/torch/test_*.py: unit tests of the package (python3 -m unittest)
# Skipped, saying why, when the Python that shardproof runs ($SHARDPROOF_PYTHON, default
# /usr/bin/python3) cannot import torch (Debian: apt-get install python3-torch).
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
dir=$(cd "$(dirname "$0")" && pwd)
py=${SHARDPROOF_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    echo "torch tests: SKIPPED: $py cannot import torch (install Debian's python3-torch:"
    echo "  apt-get install --no-install-recommends python3-torch, or make deps-torch)"
    exit 0
fi
pass=0
fail=0
# unit tests of the package (test_*.py), on the package of the source tree
pkg=${SHARDPROOF_TORCH_PATH:-$(cd "$dir/../../src/torch" && pwd)}
for t in "$dir"/test_*.py; do
    name=$(basename "$t")
    if out=$(cd "$dir" && PYTHONPATH="$pkg" "$py" -m unittest -q "${name%.py}" 2>&1); then
        pass=$((pass + 1))
        printf 'ok   %s\n' "$name"
    else
        fail=$((fail + 1))
        echo "FAIL $name:"
        echo "$out" | sed 's/^/    /' | tail -30
    fi
done
world_of() { # file -> the --world of its '# Run:' line (or of the example it imports)
    local w
    w=$(grep -m1 '^# Run: ' "$1" | sed -n 's/.*--world \([0-9]*\).*/\1/p')
    if [ -z "$w" ]; then
        local base
        base=$(sed -n 's/^import \([a-z_0-9]*\)$/\1/p' "$1" | head -1)
        [ -n "$base" ] && [ -f "$dir/$base.py" ] && w=$(world_of "$dir/$base.py")
    fi
    echo "$w"
}
for f in "$dir"/*.py; do
    name=$(basename "$f")
    case "$name" in test_*) continue ;; esac
    world=$(world_of "$f")
    [ -n "$world" ] || continue
    expect=$(grep -m1 '^# expect: ' "$f" | sed 's/^# expect: //')
    out=$(mktemp)
    err=$(mktemp)
    start=$(date +%s%N)
    "$bin" check --torch "$f" --world "$world" --no-progress >"$out" 2>"$err"
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    ok=1 why=""
    case "$expect" in
    "NOT EQUIVALENT at "*)
        at=${expect#NOT EQUIVALENT at }
        [ "$rc" = 1 ] || { ok=0; why="exit $rc, expected 1"; }
        grep -q "^  plan line:   .* ($at)\$" "$out" || { ok=0; why="$why; first failing plan line is not at $at: $(grep 'plan line' "$out")"; }
        ;;
    "error: "*)
        [ "$rc" = 2 ] || { ok=0; why="exit $rc, expected 2"; }
        grep -qF -- "${expect#error: }" "$err" || { ok=0; why="$why; message '${expect#error: }' not printed"; }
        ;;
    *)
        [ "$rc" = 0 ] || { ok=0; why="exit $rc, expected 0 (EQUIVALENT)"; }
        ;;
    esac
    if [ $ok = 1 ]; then
        pass=$((pass + 1))
        printf 'ok   %-40s %d.%d s\n' "$name" $((ms / 1000)) $((ms % 1000 / 100))
    else
        fail=$((fail + 1))
        echo "FAIL $name: $why"
        sed 's/^/    /' "$err" | head -20
        grep -v '^  plan value\|^  model value' "$out" | sed 's/^/    /' | head -20
    fi
    kept=$(sed -n 's/^shardproof: the generated plan file is kept at //p' "$err")
    if [ -n "$kept" ]; then rm -f "$kept"; rmdir "$(dirname "$kept")"; fi
    rm -f "$out" "$err"
done
echo "torch: $pass passed, $fail failed"
[ $fail = 0 ]
