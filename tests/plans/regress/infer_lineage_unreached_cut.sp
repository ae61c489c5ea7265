# --infer-lineage used to propose a partial(sum@pp) cut that stayed UNKNOWN, later stages failed on
# its fresh symbols and the verdict was NOT EQUIVALENT for this correct plan; then (a failing stage
# needing an end-to-end witness) UNKNOWN.  Proposals now come from the reference executor's values
# (src/infer.c): the relations of the micro-batch accumulations and of the dp all-reduce are found
# and proved, and the verdict is EQUIVALENT (issue 15).
# args: --infer-lineage
# expect: EQUIVALENT
# pipeline.sp: the MLP on a two-stage pipeline (pp=2) with data parallelism (dp=2), two
# micro-batches per step, gradient accumulation, and gradients all-reduced over dp at the end.
# Run: shardproof check docs/examples/pipeline.sp

dim B = 8, H = 4, F = 8, NM = 2

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

plan pp2_dp2 of mlp {
  mesh dp = 2, pp = 2
  x  : [B@dp, H]
  w1 : [H, F]
  w2 : [F, H]
  for mb in 0..NM {
    on pp = 0 {                                   # stage 0 forward: layer 1
      xm = slice(x, dim=0, start=mb*(B/dp/NM), end=(mb+1)*(B/dp/NM))
      hm = matmul(xm, w1)
      send(relu(hm), pp = 1)
    }
    on pp = 1 {                                   # stage 1: layer 2, loss, backward
      am = recv(pp = 0)
      ym = matmul(am, w2)
      lossp += sum(ym) / (B*H)
      gy = mul(ym, 0) + 1/(B*H)
      gw2 += matmul(transpose(am, 0, 1), gy)
      send(matmul(gy, transpose(w2, 0, 1)), pp = 0)
    }
    on pp = 0 {                                   # stage 0 backward
      ga = recv(pp = 1)
      gw1 += matmul(transpose(xm, 0, 1), where(gt(hm, 0), ga, 0))
    }
  }
  on pp = 0 {
    g1 = all_reduce(gw1, sum, dp)
    output grad.w1 = g1 : [H, F]
    output next.w1 = w1 - g1 / 64 : [H, F]
  }
  on pp = 1 {
    g2 = all_reduce(gw2, sum, dp)
    output grad.w2 = g2 : [F, H]
    output next.w2 = w2 - g2 / 64 : [F, H]
    output loss = all_reduce(lossp, sum, dp) : []
  }
}
