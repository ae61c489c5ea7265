# A correct data-parallel mean that divides by the global token count written as a literal,
# 131072 = B*S.  The reduction keeps literals and sizes apart (S checked at 3), the real sizes
# are past the reference executor, and the difference at the checked sizes stood as the
# witness: NOT EQUIVALENT (helper-44's review, session 31).  A literal that is a product of
# sizes at the real sizes only (src/reduce.c lit_relations) makes such a difference no
# witness: the real sizes are checked (src/crosscheck.c no_witness).
dim B = 8, S = 16384
model m {
  input x : [B, S]
  loss = mean(x)
  output loss
}
plan p of m {
  mesh dp = 2
  x : [B@dp, S]
  lp = sum(x) / 131072
  loss = all_reduce(lp, sum, dp)
  output loss = loss : []
}
