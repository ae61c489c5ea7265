# expect: on_coordinate_off_mesh.sp:20:11: error: 'on dp = 7': the mesh axis 'dp' has coordinates 0 to 1
# Found by a review (2026-12-04): an 'on' coordinate off the mesh selected no rank, so the block silently never ran (EQUIVALENT with a wrong output inside it).
dim B = 8, H = 16, F = 4*H
model mlp {
  input x  : [B, H]
  param w1 : [H, F]
  h    = matmul(x, w1)
  loss = mean(h)
  output loss
}
plan p of mlp {
  mesh dp = 2
  x  : [B@dp, H]
  w1 : [H, F]
  h  = matmul(x, w1)
  lp = sum(h) / (B*F)
  loss = all_reduce(lp, sum, dp)
  on dp = 0 { output loss = loss : [] }
  on dp = 1 { output loss = loss : [] }
  on dp = 7 { output loss = loss * 3 : [] }
}
