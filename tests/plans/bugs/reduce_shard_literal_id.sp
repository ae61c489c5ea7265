# expect: NOT EQUIVALENT at line 16
# Literal ids into a vocabulary shard (review of 2026-12-04, helper-24): EQUIVALENT before at
# V = 902. The model reads row 900 of a [1000, 128] table; the plan shards the vocabulary over
# tp = 2 (rank 1 holds rows 500..999) and reads local row 449, row 949 (row 900 at V = 902). A
# shard of 500 rows is at or below the literal 900: V keeps its real size.
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
    output e = embedding(emb, ids = [449], shape = [1]) : [1, H]
  }
}
