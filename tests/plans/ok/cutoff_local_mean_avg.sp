# The mesh cutoff as a proof (docs/soundness.md, "Mesh cutoff"): each rank takes the mean of its
# rows (a count of B/dp rows, whose real value is B/dp at the real sizes: the cut axis's exponent
# is part of the shard's extent), the ranks average it (avg divides by the real dp) for `a`, and
# for `l` each rank's share lm/dp is a pending sum over dp, cut at `lp` and summed again (a whole
# decomposition). Checked with dp = 8 at 3 and the checker alone (--no-cross-check): EQUIVALENT is
# its proof.
# args: --mesh-cutoff --no-cross-check
dim B = 4096, H = 64
model m {
  input x : [B, H]
  param w : [H]
  y = x * w
  l = mean(y)
  a = mean(y) * 2
  output l, a
}
plan p of m {
  mesh dp = 8
  x : [B@dp, H]
  w : [H]
  y = x * w
  lm = mean(y)
  output a = all_reduce(lm * 2, avg, dp) : []
  lp = lm / dp ~ l : [] partial(sum@dp)
  output l = all_reduce(lp, sum, dp) : []
}
