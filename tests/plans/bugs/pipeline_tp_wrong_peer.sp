# pipeline_tp_wrong_peer: the activations go to the other tensor-parallel rank of the next stage
# (send and recv agree with each other, so nothing deadlocks: the values are just wrong).
# expect: NOT EQUIVALENT at line 29

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
    send(relu(h), pp = 1, tp = 1 - rank.tp)
  }
  on pp = 1 {
    a  = recv(pp = 0, tp = 1 - rank.tp)                   ~ a : [B, F@tp]
    y  = all_reduce(matmul(a, w2), sum, tp)
    output loss = sum(y) / (B*H) : []
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
