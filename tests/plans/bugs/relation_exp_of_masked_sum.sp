# expect: NOT EQUIVALENT at line 72
# helper-85's review (session 44): EQUIVALENT by default on 22eb700 (K = 5): exp(sum(m * x)) with m dropping
# two ties holds 3 elements, where the exp rule counted the cone's 5; now the bound is strict against
# the smaller of that count and the dim's bound (src/members.c sp_members_test).
# Fixed in the mechanism (docs/soundness.md, "Positional patterns"); the output is padded past the reference executor.
dim K = 100001
model m {
  input x : [K]
  input c : [1]
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
  z = expand(c * 0, [K])
  m = 1 - topk_mask(z, k = 2)
  y = exp(sum(m * x))
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [K]
  c : [1]
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
  z = expand(c * 0, [K])
  m = 1 - topk_mask(z, k = 2)
  w = m * exp(x)
  p1 = sum(w)
  p2 = sum(w * w)
  p3 = sum(w * w * w)
  e3 = (p1 * p1 * p1 - 3 * p1 * p2 + 2 * p3) / 6
  y = e3
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
