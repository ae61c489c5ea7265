# expect: reduce_dims_of_unmodelled_size.sp:6:5: error: --dims B=6: 'B' keeps its real size 4097 (it is used where the shape reduction does not model it: a remainder, a power, a comparison or piecewise function of sizes, a rank- or loop-dependent condition, a user function's argument, a sum of sizes, or explicit shard sizes)
# Found by an adversarial review (2026-12-04): --dims could reduce a size that the program uses
# under a remainder (B % 4), which the reduction does not model; EQUIVALENT before at B = 6.
# args: --dims B=6
# a size modulo a literal used as a value: real B % 4 = 1 (plan wrong), reduced B % 4 = 2 (right)
dim B = 4097, H = 64

model m {
  input x : [B, H]
  y = x * 2
  output y
}

plan p of m {
  mesh dp = 2
  x : [B, H]
  y = x * (0 + B % 4)
  output y = y : [B, H]
}
