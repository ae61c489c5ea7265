# helper-92's review (session 46): the plan of bugs/relation_causal_edge_literal_rows.sp against its true value (e3 of two rows
# is 0): NOT EQUIVALENT on ef71de6 (a false alarm at T = 7, K = 5); EQUIVALENT at sizes of the real difference (src/check.c keep_order).
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
  y = sum(w) * 0
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
