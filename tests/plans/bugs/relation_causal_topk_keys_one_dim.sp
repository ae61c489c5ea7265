# expect: NOT EQUIVALENT at line 90
# helper-84's review (session 44): EQUIVALENT by default on a91bff7 (S = 10): causal_mask(offset = -3)
# times 1 - top-k of ties (k = 4) on [S, S]: the last row keeps S - 7 keys, 3 at S = 10; the room was
# the smaller of the two patterns' (S - 4), not S - 8. Now the kinds' slacks add up.
# Fixed in the mechanism (docs/soundness.md, "Positional patterns"). The output is padded so that the reference executor skips its runs.
dim S = 10001
model m {
  input x : [S]
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
  o = expand(c * 0 + 1, [S, S])
  m = causal_mask(o, offset = -3) * (1 - topk_mask(o * 0, k = 4, dim = 1))
  p1 = sum(m * (x), dim = 1)
  p2 = sum(m * (x) * (x), dim = 1)
  p3 = sum(m * (x) * (x) * (x), dim = 1)
  p4 = sum(m * (x) * (x) * (x) * (x), dim = 1)
  t0 = p1 * p1 * p1 * p1
  c0 = t0
  t1 = p1 * p1 * p2
  t1d1 = t1 + t1
  t1d2 = t1d1 + t1d1
  c1 = t1d1 + t1d2
  t2 = p1 * p3
  t2d1 = t2 + t2
  t2d2 = t2d1 + t2d1
  t2d3 = t2d2 + t2d2
  c2 = t2d3
  t3 = p2 * p2
  t3d1 = t3 + t3
  c3 = t3 + t3d1
  t4 = p4
  t4d1 = t4 + t4
  t4d2 = t4d1 + t4d1
  c4 = t4d1 + t4d2
  e = c0 + c2 + c3 - c1 - c4
  y = (p1 + e)
  output y, acc
}
plan p of m {
  mesh tp = 2
  x : [S]
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
  o = expand(c * 0 + 1, [S, S])
  m = causal_mask(o, offset = -3) * (1 - topk_mask(o * 0, k = 4, dim = 1))
  y = (sum(m * (x), dim = 1))
  output y = y : [S]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
