# expect: EQUIVALENT
# Literal ids into a vocabulary shard, right (review of 2026-12-04, helper-24): NOT EQUIVALENT
# before, with a counterexample (row 851 for row 900) that exists only at V = 902. Rank 1 of
# tp = 2 holds rows 500..999 of the real table, so its local row 400 is the model's row 900.
dim V = 1000, H = 128
model m {
  input emb : [V, H]
  e = embedding(emb, ids = [900], shape = [1])
  output e
}
plan p of m {
  mesh tp = 2
  emb : [V@tp, H]
  on tp = 1 {
    output e = embedding(emb, ids = [400], shape = [1]) : [1, H]
  }
}
