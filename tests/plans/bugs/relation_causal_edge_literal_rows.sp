# expect: NOT EQUIVALENT at line 76
# helper-92's review (session 46): EQUIVALENT by default on ef71de6: rows past the last key of a mask on [T, K] (T = 1001,
# K = 1000: 2 rows) against a model counting 3 rows with a literal offset on [T, T]; checked at T = 7, K = 5 (3 rows) both agreed.
# Now the counts must be the real ones: checked at sizes of the real difference (src/check.c keep_order, T = 11, K = 10).
dim T = 1001, K = 1000
model m {
  input w : [T]
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
  g = expand(c * 0 + 1, [T, T])
  f = g - causal_mask(g, offset = 2)
  e = amax(f, dim = 1)
  u = w * (1 - e)
  p1 = sum(u)
  p2 = sum(u * u)
  p3 = sum(u * u * u)
  y = p1 * p1 * p1 - 3 * p1 * p2 + 2 * p3
  output y, acc
}
plan p of m {
  mesh tp = 2
  w : [T]
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
  g = expand(c * 0 + 1, [T, K])
  f = g - causal_mask(g, offset = 0)
  e = amax(f, dim = 1)
  u = w * (1 - e)
  p1 = sum(u)
  p2 = sum(u * u)
  p3 = sum(u * u * u)
  y2 = p1 * p1 * p1 - 3 * p1 * p2 + 2 * p3
  output y = y2 : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
