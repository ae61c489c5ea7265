# expect: NOT EQUIVALENT at line 65
# helper-91's review (session 46), EQUIVALENT by default before: a causal pattern on [T, K] of two dims (T real 100002 > K real 100000) reduced to T = 3 < K = 25000: amax over K of the strict mask is [t < K - 1], 0 on the rows past the last key, which the checked sizes do not have.
# Now found at sizes of the real difference (T=5 K=3: src/check.c keep_order); the small copy is bugs/relation_causal_edge_rows.sp.
dim T = 100002
dim K = 100000
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
  y = w * 1
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
  z = expand(c * 0 + 1, [T, K])
  f = z - causal_mask(z, offset = 0)
  e = amax(f, dim = 1)
  y2 = w * e
  output y = y2 : [T]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
