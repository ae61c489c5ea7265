# collective_member_missing_no_lineage.sp: a collective that one member of its group never joins,
# in a plan without lineage.  The error path left the split-divisibility fields of the operator
# error uninitialized, and the check's size repair (src/check.c run_divisible) divided by that
# garbage: a SIGFPE instead of this error (plan-level fuzzer on 4b44492, 13 mutants).
# expect: collective_member_missing_no_lineage.sp:18:9: error: collective on rank (dp=0) needs rank (dp=1), which does not take part
dim B = 4

model m {
  input x : [B]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B@dp]
  on dp = 0 {
    z = all_reduce(x, sum, dp)
  }
  y = x * 2
  output y = y : [B@dp]
}
