#!/usr/bin/env bash
# reports.sh: every --format (json, sarif, junit) is a valid document for every outcome:
# EQUIVALENT, NOT EQUIVALENT, UNKNOWN, bad input (syntax, unknown plan, an input limit, an
# unreadable file, a usage error after the file is known, a failed import or merge), checked by
# tests/check_reports.py (JSON parsed; SARIF 2.1.0's required shape; JUnit by a real XML parser).
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0
bad() { echo "reports: $*"; fail=1; }
if ! [ -x "$py" ]; then
    echo "reports: $py is missing (Debian's python3)"; exit 1
fi

case_() { # WANT-EXIT DIR ARGS... : run in DIR with each format, validate, compare exit codes
    local want=$1 dir=$2
    shift 2
    for fmt in json sarif junit; do
        (cd "$dir" && "$bin" "$@" --format "$fmt") >"$tmp/doc" 2>"$tmp/err"
        local rc=$?
        runs=$((runs + 1))
        [ "$rc" = "$want" ] || { bad "$* --format $fmt: exit $rc, expected $want: $(head -2 "$tmp/err")"; continue; }
        [ -s "$tmp/doc" ] || { bad "$* --format $fmt: no document"; continue; }
        "$py" "$root/tests/check_reports.py" "$fmt" "$rc" "$tmp/doc" || bad "$* --format $fmt: invalid document"
    done
}

ex=$root/docs/examples
case_ 0 "$ex" check mlp.sp --no-progress
case_ 1 "$root/tests/plans/bugs" check mlp_row_allreduce_dropped.sp --no-progress
case_ 3 "$root/tests/plans/regress" check coeff_bits_limit.sp --no-progress \
    $(grep -m1 '^# args:' "$root/tests/plans/regress/coeff_bits_limit.sp" | sed 's/^# args: *//')
case_ 2 "$root/tests/plans/bad" check syntax_missing_rparen.sp --no-progress
case_ 2 "$root/tests/plans/bad" check name_unknown_tensor.sp --no-progress
case_ 2 "$ex" check mlp.sp --plan no_such_plan --no-progress
case_ 2 "$ex" check mlp.sp --seeed 3 --no-progress
case_ 2 "$ex" check mlp.sp --shapes 0 --no-progress
case_ 2 "$ex" check mlp.sp --max-tokens 10 --no-progress
case_ 2 "$ex" check no_such_file.sp --no-progress
case_ 2 "$ex" check --nnscaler no_such_logical.json no_such_parallel.json --no-progress

# names that need escaping (quotes, markup, spaces, non-ASCII) in the file name
weird="$tmp/a \"q\" <&> é.sp"
cp "$root/tests/plans/bugs/mlp_row_allreduce_dropped.sp" "$weird"
case_ 1 "$tmp" check "$(basename "$weird")" --no-progress
case_ 1 "$tmp" check "$weird" --no-progress
# standard input: no file location in SARIF, still a valid document
for fmt in json sarif junit; do
    "$bin" check - --no-progress --format $fmt <"$root/tests/plans/bugs/mlp_row_allreduce_dropped.sp" >"$tmp/doc" 2>/dev/null
    rc=$?
    runs=$((runs + 1))
    [ $rc = 1 ] || bad "check - --format $fmt: exit $rc"
    "$py" "$root/tests/check_reports.py" $fmt $rc "$tmp/doc" || bad "check - --format $fmt: invalid document"
done

# source-map comments ('#@ ORIGIN' on every statement line): each format names the origin of
# the failing plan line, the line's own number here (JSON: plan_loc.origin; SARIF: the
# location's properties.origin; JUnit: "(gen.py:N)" after the plan line)
awk '!/#/ && NF { printf "%s    #@ gen.py:%d\n", $0, NR; next } { print }' \
    "$root/tests/plans/bugs/mlp_row_allreduce_dropped.sp" >"$tmp/origins.sp"
case_ 1 "$tmp" check origins.sp --no-progress
for fmt in json sarif junit; do
    (cd "$tmp" && "$bin" check origins.sp --no-progress --format $fmt) >"$tmp/doc" 2>/dev/null
    "$py" - "$fmt" "$tmp/doc" <<'PY' || bad "check origins.sp --format $fmt: the failing plan line's origin is missing"
import json, re, sys
fmt, text = sys.argv[1], open(sys.argv[2], encoding="utf-8").read()
if fmt == "json":
    loc = next(s for s in json.loads(text)["stages"] if s["status"] == "failed")["plan_loc"]
    ok = loc.get("origin") == f"gen.py:{loc['line']}"
elif fmt == "sarif":
    loc = json.loads(text)["runs"][0]["results"][0]["locations"][0]
    line = loc["physicalLocation"]["region"]["startLine"]
    ok = loc.get("properties", {}).get("origin") == f"gen.py:{line}" and \
        loc["message"]["text"] == f"generated from gen.py:{line}"
else:
    m = re.search(r"plan line: origins\.sp:(\d+):\d+ \(gen\.py:(\d+)\)", text)
    ok = m is not None and m.group(1) == m.group(2)
sys.exit(0 if ok else 1)
PY
done

# merge: a valid document when the merge itself fails
"$bin" check "$ex/mlp.sp" --shard 0/2 >"$tmp/p0.json" 2>/dev/null
case_ 2 "$tmp" merge p0.json --no-progress
"$bin" check "$ex/mlp.sp" --shard 1/2 >"$tmp/p1.json" 2>/dev/null
case_ 0 "$tmp" merge p0.json p1.json --no-progress

echo "reports: $runs documents; $([ $fail = 0 ] && echo passed || echo FAILED)"
[ $fail = 0 ]
