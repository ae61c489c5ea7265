# pipeline_1f1b_wrong_rows: stage 1 relates every micro-batch it receives to the first micro-batch's rows
# expect: UNKNOWN
# (Since the reference executor: the only defect is the lineage annotation at line 40 -- the plan's
# outputs are right -- so the failing stage has no end-to-end witness and the verdict is UNKNOWN
# with the stage as evidence; it was NOT EQUIVALENT at line 37 before.)
# Stage 0 runs F0 F1 B0 B1, stage 1 runs F0 B0 F1 B1: micro-batch 1's forward on stage 1 comes
# after micro-batch 0's backward, so every cut relates a row slice (`~ h[lo..hi]`) of a model
# tensor, the rows of one micro-batch, instead of the whole tensor.

dim B = 4, H = 4, F = 8, NM = 2, M = B/NM

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

plan pp2_1f1b of mlp {
  mesh pp = 2
  x  : [B, H]
  w1 : [H, F]
  w2 : [F, H]
  # stage 0: F0 F1
  for mb in 0..NM {
    on pp = 0 {
      xm[mb] = slice(x, dim=0, start=mb*M, end=(mb+1)*M)
      hm[mb] = matmul(xm[mb], w1)      ~ h[mb*M..(mb+1)*M] : [M, F]
      send(relu(hm[mb]), pp = 1)
    }
  }
  # stage 1: F0 B0 F1 B1, stage 0: B0 after stage 1's B0, B1 last
  for mb in 0..NM {
    on pp = 1 {
      am = recv(pp = 0)                ~ a[0..M] : [M, F]
      ym = matmul(am, w2)              ~ y[mb*M..(mb+1)*M] : [M, H]
      lossp += sum(ym) / (B*H)
      gy = mul(ym, 0) + 1/(B*H)
      gw2 += matmul(transpose(am, 0, 1), gy)
      send(matmul(gy, transpose(w2, 0, 1)), pp = 0)
    }
    on pp = 0 {
      ga = recv(pp = 1)                ~ grad.a[mb*M..(mb+1)*M] : [M, F]
      gw1 += matmul(transpose(xm[mb], 0, 1), where(gt(hm[mb], 0), ga, 0))
    }
  }
  on pp = 0 {
    output grad.w1 = gw1 : [H, F]
    output next.w1 = w1 - gw1 / 64 : [H, F]
  }
  on pp = 1 {
    output grad.w2 = gw2 : [F, H]
    output next.w2 = w2 - gw2 / 64 : [F, H]
    output loss = lossp : []
  }
}
