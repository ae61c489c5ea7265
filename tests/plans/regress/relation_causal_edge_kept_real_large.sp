# expect: UNKNOWN: limit max-elements
# helper-91's review (session 46), EQUIVALENT by default before: the same with K = 5 kept real and T checked at 3: every row t >= 4 is past the last key at the real sizes only.
# Now the real sizes decide (src/exec_pos.c causal_edges); the small copy is bugs/relation_causal_edge_kept_real.sp.
dim T = 100002
dim K = 5
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
