# infer_reduce_scatter_sizes.sp: a row-parallel matmul whose partial sums are reduce-scattered
# along the sequence (sequence parallelism), written without lineage.  Lineage inference relates
# `yp` to the model's `y` as a pending sum over tp; the reduce_scatter splits S over tp, which no
# layout states (the output is gathered again), so the first reduction (S = 2) fails the split and
# the check runs again with S a multiple of 3 (src/check.c run_divisible).
dim S = 12, H = 6

model m {
  input x : [S, H]
  param w : [H, H]
  y = matmul(x, w)
  output y
}

plan p of m {
  mesh tp = 3
  x : [S, H@tp]
  w : [H@tp, H]
  yp = matmul(x, w)
  ys = reduce_scatter(yp, 0, sum, tp)
  y = all_gather(ys, 0, tp)
  output y = y : [S, H]
}
