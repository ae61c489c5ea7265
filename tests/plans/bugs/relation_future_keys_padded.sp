# expect: NOT EQUIVALENT at line 79
# helper-77's review (session 43): EQUIVALENT by default before session 43; future_e3 with an output (nested literal loops) that makes the reference executor skip its second run.
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"):
# a positional pattern (a causal mask's offset, top-k's ties) keeps elements apart, so the
# bound needs that many more (src/members.c sp_members_slack); a failing bound beside an
# atom of a sum over the dim is no longer excused; a stage that fails the bound is checked
# again at a size whose block holds its monomials (src/check.c regrow).
dim T = 1000, S = 1000
model m {
  input x : [S]
  input z : [T, S]
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
  f = 1 - causal_mask(z)
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  p3 = sum(f * x * x * x, dim = 1)
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
  x : [S]
  z : [T, S]
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
  f = 1 - causal_mask(z)
  y = sum(f * x, dim = 1)
  output y = y : [T]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
