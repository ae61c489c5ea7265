# expect: NOT EQUIVALENT at line 74
# helper-77's review (session 43): EQUIVALENT by default before session 43; the same at offset -2 (e2 of the kept keys), with an output that makes the reference executor skip its second run.
# Fixed in the mechanism (docs/soundness.md, "Relations among sums over a reduced dim"):
# a positional pattern (a causal mask's offset, top-k's ties) keeps elements apart, so the
# bound needs that many more (src/members.c sp_members_slack); a failing bound beside an
# atom of a sum over the dim is no longer excused; a stage that fails the bound is checked
# again at a size whose block holds its monomials (src/check.c regrow).
dim S = 1000
model m {
  input x : [S]
  input z : [S, S]
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
  f = causal_mask(z, offset = -2)
  p1 = sum(f * x, dim = 1)
  p2 = sum(f * x * x, dim = 1)
  nwt0 = p2
  nwc0 = nwt0
  nwt1 = p1 * p1
  nwc1 = nwt1
  e = nwc1 - nwc0
  y = p1 + e
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [S]
  z : [S, S]
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
  f = causal_mask(z, offset = -2)
  y = sum(f * x, dim = 1)
  output y = y : [S]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
