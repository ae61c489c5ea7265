# expect: NOT EQUIVALENT at line 93
# helper-86's review (session 44): EQUIVALENT by default on affb317 (S = 10): 1 - causal_mask(offset = 3) on the
# first key block: row 0 keeps S/2 - 4; the same fix as relation_causal_last_block.sp.
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
  z = expand(c * 0 + 1, [S, S])
  f = z - causal_mask(z, offset = 3)
  fc = chunk(f, 2, 1, 0)
  xc = chunk(x, 2, 0, 0)
  p1 = sum(fc * (xc), dim = 1)
  p2 = sum(fc * (xc) * (xc), dim = 1)
  p3 = sum(fc * (xc) * (xc) * (xc), dim = 1)
  p4 = sum(fc * (xc) * (xc) * (xc) * (xc), dim = 1)
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
  z = expand(c * 0 + 1, [S, S])
  f = z - causal_mask(z, offset = 3)
  fc = chunk(f, 2, 1, 0)
  xc = chunk(x, 2, 0, 0)
  y = sum(fc * (xc), dim = 1)
  output y = y : [S]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
