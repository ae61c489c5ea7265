# reduce_strict_repin.sp: the grouped-query shape of `gen llama3 --dp 8` under --strict-shapes.
# B = 16 over dp = 8 must keep its real size (B = 8 would be the mesh size), so B/dp = 2; NKV,
# chosen before B, had taken 2 and collided with it, and every later size then failed for NKV's
# sake: "no admissible shape reduction: 'G' = ... is not a whole size". The sizes are now chosen
# again with B's pin known from the start (NKV = 3, NH = 12).
# args: --strict-shapes --full-mesh
dim NKV = 8, NH = 32, B = 16
dim G = NH/NKV
model m {
  input x : [B, NH]
  y = sum(reshape(x, [B, NKV, G]), dim = 2)
  output y
}
plan p of m {
  mesh dp = 8
  x : [B@dp, NH]
  y = sum(reshape(x, [B/dp, NKV, G]), dim = 2)
  output y = y : [B@dp, NKV]
}
