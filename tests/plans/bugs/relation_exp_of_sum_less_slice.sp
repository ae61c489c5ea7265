# expect: NOT EQUIVALENT at line 71
# helper-85's review (session 44): EQUIVALENT by default on 22eb700 (K = 5): exp(sum(x) - sum(slice(x, 0, 0, 1)))
# holds 4 elements, the cone 5; the same fix as relation_exp_of_masked_sum.sp.
# Fixed in the mechanism (docs/soundness.md, "Positional patterns"); the output is padded past the reference executor.
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
  h = slice(x, 0, 0, 1)
  s = sum(x) - sum(h)
  y = exp(s)
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
  h = slice(x, 0, 0, 1)
  s = sum(x) - sum(h)
  w = exp(x)
  w0 = exp(h)
  p1 = sum(w) - sum(w0)
  p2 = sum(w * w) - sum(w0 * w0)
  p3 = sum(w * w * w) - sum(w0 * w0 * w0)
  p4 = sum(w * w * w * w) - sum(w0 * w0 * w0 * w0)
  e4 = (p1 * p1 * p1 * p1 - 6 * p1 * p1 * p2 + 3 * p2 * p2 + 8 * p1 * p3 - 6 * p4) / 24
  y = e4
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
