# expect: NOT EQUIVALENT at line 74
# args: --dims T=9,K=7
# helper-92's review (session 46): EQUIVALENT on ef71de6 with these sizes: the keys past the last query of a mask on [K, T]
# (1 at the real sizes, 2 at T = 9, K = 7) against a model dropping 2 with a literal offset. Now checked at sizes of the real difference.
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
  f = causal_mask(g, offset = -2)
  e = amax(f, dim = 0)
  u = w * (1 - e)
  p1 = sum(u)
  p2 = sum(u * u)
  y = p1 * p1 - p2
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
  g = expand(c * 0 + 1, [K, T])
  f = causal_mask(g, offset = 0)
  e = amax(f, dim = 0)
  u = w * (1 - e)
  p1 = sum(u)
  p2 = sum(u * u)
  y2 = p1 * p1 - p2
  output y = y2 : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
