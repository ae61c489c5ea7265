# reduce_value_sum_for_product.sp: docs/examples/pipeline_tp.sp with the loss divided by (B+H)
# for the model's mean over [B, H] (B*H). At the real B = H = 4 that is 8 against 16; at the
# default reduction's B = H = 2 both are 4. The plan also writes 1/(B*H) (the backward seed),
# but as a value that is no whole size it was no size of its own, and its B*H was not kept
# apart from B+H: EQUIVALENT under the checker alone (plan-level fuzzer on 4c6fff4, seed 1401,
# mutant 1272: find K). The parts of such a value are values now (src/reduce.c collect_expr).
# expect: NOT EQUIVALENT at line 34
dim B = 4, H = 4, F = 8

model mlp {
  input x  : [B, H]
  param w1 : [H, F]
  param w2 : [F, H]
  h    = matmul(x, w1)
  a    = relu(h)
  y    = matmul(a, w2)
  loss = mean(y)
  output loss
  train sgd(lr = 1/64)
}

plan pp2_tp2 of mlp {
  mesh pp = 2, tp = 2
  x  : [B, H]
  w1 : [H, F@tp]
  w2 : [F@tp, H]
  on pp = 0 {
    h = matmul(x, w1)
    send(relu(h), pp = 1)
  }
  on pp = 1 {
    a  = recv(pp = 0)                     ~ a : [B, F@tp]
    y  = all_reduce(matmul(a, w2), sum, tp)
    output loss = sum(y) / (B+H) : []
    gy = mul(y, 0) + 1/(B*H)
    output grad.w2 = matmul(transpose(a, 0, 1), gy) : [F@tp, H]
    output next.w2 = w2 - (matmul(transpose(a, 0, 1), gy)) / 64 : [F@tp, H]
    send(matmul(gy, transpose(w2, 0, 1)), pp = 0)
  }
  on pp = 0 {
    ga = recv(pp = 1)
    output grad.w1 = matmul(transpose(x, 0, 1), where(gt(h, 0), ga, 0)) : [H, F@tp]
    output next.w1 = w1 - (matmul(transpose(x, 0, 1), where(gt(h, 0), ga, 0))) / 64 : [H, F@tp]
  }
}
