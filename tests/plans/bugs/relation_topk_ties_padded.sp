# expect: NOT EQUIVALENT at line 77
# helper-77's review (session 43): EQUIVALENT by default before session 43; the same with k = 2 and e3, with an output that makes the reference executor skip its second run.
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"):
# a positional pattern (a causal mask's offset, top-k's ties) keeps elements apart, so the
# bound needs that many more (src/members.c sp_members_slack); a failing bound beside an
# atom of a sum over the dim is no longer excused; a stage that fails the bound is checked
# again at a size whose block holds its monomials (src/check.c regrow).
dim K = 100001
model m {
  input x : [K]
  input v : [2, 2, 2, 2, 2, 2, 2, 2]
  acc = v * 1
  for i0 in 0..2 {
    for i1 in 0..2 {
      for i2 in 0..2 {
        for i3 in 0..2 {
          for i4 in 0..2 {
            for i5 in 0..2 {
              for i6 in 0..2 {
                for i7 in 0..2 {
                  for i8 in 0..2 {
                    for i9 in 0..2 {
                      acc += v
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  g = 1 - topk_mask(x * 0, k = 2)
  p1 = sum(g * x)
  p2 = sum(g * x * x)
  p3 = sum(g * x * x * x)
  nwt0 = p3
  nwt0d1 = nwt0 + nwt0
  nwc0 = nwt0d1
  nwt1 = p2 * p1
  nwt1d1 = nwt1 + nwt1
  nwc1 = nwt1 + nwt1d1
  nwt2 = p1 * p1 * p1
  nwc2 = nwt2
  e = nwc0 + nwc2 - nwc1
  y = p1 + e
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [K]
  v : [2, 2, 2, 2, 2, 2, 2, 2]
  acc = v * 1
  for i0 in 0..2 {
    for i1 in 0..2 {
      for i2 in 0..2 {
        for i3 in 0..2 {
          for i4 in 0..2 {
            for i5 in 0..2 {
              for i6 in 0..2 {
                for i7 in 0..2 {
                  for i8 in 0..2 {
                    for i9 in 0..2 {
                      acc += v
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  g = 1 - topk_mask(x * 0, k = 2)
  y = sum(g * x)
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
