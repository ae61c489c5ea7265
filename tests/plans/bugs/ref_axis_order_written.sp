# expect: NOT EQUIVALENT at line 17
# ref_axis_order_written.sp: a layout dim sharded over (tp,dp) is numbered major to minor as written
# (tp major), not in mesh order: rank (dp=0, tp=1) holds column 2, the output layout @(dp,tp)
# says column 1.  The reference executor numbered members in mesh order and agreed with this
# plan (found by the review of the mesh cutoff); both executors now follow the written order.
dim S = 2, NH = 4

model m {
  input x : [S, NH]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2, tp = 2
  x : [S, NH@(tp,dp)]
  y = x * 2
  output y = y : [S, NH@(dp,tp)]
}
