# expect: layout_mesh_too_large.sp:12:25: error: the mesh has more than 65536 ranks (--max-ranks)
# a mesh beyond the rank limit
dim B = 4, H = 4, F = 8
model m {
  input x : [B, H]
  param w1 : [H, F]
  h = matmul(x, w1)
  y = relu(h)
  output y
}
plan p of m {
  mesh dp = 65536, tp = 65536
  x : [B@dp, H]
}
