# A sum over an axis of one element is its one term, here a sum of another kind (x*(w + 1) +
# x*w, whose summands share the monomial x*w). Until 2026-12-07 `addv` marked that term as an
# axis sum, so the count test (docs/soundness.md, "Counts") took the shared monomial for a count
# and sent the check to the real sizes, where x exceeds --max-elements: UNKNOWN. The same false
# mark, shared by hash-consing, sent helper-65's pipeline plan (a gradient's two contributions
# summed over one micro-batch row) to the real sizes.
dim H = 1000000, O = 1
model m {
  input x : [H, O]
  input w : [H, O]
  y = sum(x * (w + 1) + x * w, dim = 1)
  output y
}
plan p of m {
  mesh tp = 2
  x : [H@tp, O]
  w : [H@tp, O]
  y = sum(x * (w + 1) + x * w, dim = 1)
  output y = y : [H@tp]
}
