# expect: NOT EQUIVALENT at line 92
# helper-85's review (session 44): EQUIVALENT by default on 22eb700 (S = 10): top-k of ties on [S], then chunk 0
# of 2 keeps S/2 - 2; helper-80's chunk find the other way round; the same fix as
# relation_rope_halves_less_topk.sp.
# Fixed in the mechanism (docs/soundness.md, "Positional patterns"); the output is padded past the reference executor.
dim S = 100002
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
  z = expand(c * 0, [S])
  m = 1 - topk_mask(z, k = 2)
  w = chunk(m * x, 2, 0, 0)
  p1 = sum((w))
  p2 = sum((w) * (w))
  p3 = sum((w) * (w) * (w))
  p4 = sum((w) * (w) * (w) * (w))
  nwt0 = p1 * p1 * p1 * p1
  nwc0 = nwt0
  nwt1 = p1 * p1 * p2
  nwt1d1 = nwt1 + nwt1
  nwt1d2 = nwt1d1 + nwt1d1
  nwc1 = nwt1d1 + nwt1d2
  nwt2 = p1 * p3
  nwt2d1 = nwt2 + nwt2
  nwt2d2 = nwt2d1 + nwt2d1
  nwt2d3 = nwt2d2 + nwt2d2
  nwc2 = nwt2d3
  nwt3 = p2 * p2
  nwt3d1 = nwt3 + nwt3
  nwc3 = nwt3 + nwt3d1
  nwt4 = p4
  nwt4d1 = nwt4 + nwt4
  nwt4d2 = nwt4d1 + nwt4d1
  nwc4 = nwt4d1 + nwt4d2
  e = nwc0 + nwc2 + nwc3 - nwc1 - nwc4
  y = p1 + e
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
  z = expand(c * 0, [S])
  m = 1 - topk_mask(z, k = 2)
  w = chunk(m * x, 2, 0, 0)
  y = sum((w))
  output y = y : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
