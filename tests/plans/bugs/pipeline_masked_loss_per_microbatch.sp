# pipeline_masked_loss_per_microbatch: each micro-batch's loss is averaged over its own tokens
# (then over micro-batches and replicas), which differs from the global token mean when masks are uneven.
# expect: NOT EQUIVALENT at line 49

dim B = 8, H = 4, F = 8, NM = 2

model mlpm {
  input x  : [B, H]
  input m  : [B]                          # loss mask: how much each token counts
  param w1 : [H, F]
  param w2 : [F, H]
  h    = matmul(x, w1)
  a    = relu(h)
  y    = matmul(a, w2)
  l    = sum(y, dim=1)                    # a per-token loss
  loss = sum(l * m) / sum(m)
  output loss
  train sgd(lr = 1/64)
}

plan pp2_dp2 of mlpm {
  mesh dp = 2, pp = 2
  x  : [B@dp, H]
  m  : [B@dp]
  w1 : [H, F]
  w2 : [F, H]
  M = all_reduce(sum(m), sum, dp)         # the global token count
  for mb in 0..NM {
    on pp = 0 {
      xm = slice(x, dim=0, start=mb*(B/dp/NM), end=(mb+1)*(B/dp/NM))
      hm = matmul(xm, w1)
      send(relu(hm), pp = 1)
    }
    on pp = 1 {
      am = recv(pp = 0)
      mm = slice(m, dim=0, start=mb*(B/dp/NM), end=(mb+1)*(B/dp/NM))
      ym = matmul(am, w2)
      lossp += sum(sum(ym, dim=1) * mm) / sum(mm) / (NM*dp)
      gy = mul(ym, 0) + unsqueeze(mm / sum(mm) / (NM*dp), 1)
      gw2 += matmul(transpose(am, 0, 1), gy)
      send(matmul(gy, transpose(w2, 0, 1)), pp = 0)
    }
    on pp = 0 {
      ga = recv(pp = 1)
      gw1 += matmul(transpose(xm, 0, 1), where(gt(hm, 0), ga, 0))
    }
  }
  on pp = 1 {
    L = all_reduce(lossp, sum, dp)
    output loss = L : []
    g2 = all_reduce(gw2, sum, dp)
    output grad.w2 = g2 : [F, H]
    output next.w2 = w2 - g2 / 64 : [F, H]
  }
  on pp = 0 {
    g1 = all_reduce(gw1, sum, dp)
    output grad.w1 = g1 : [H, F]
    output next.w1 = w1 - g1 / 64 : [H, F]
  }
}
