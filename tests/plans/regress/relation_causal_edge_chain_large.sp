# expect: UNKNOWN: limit max-elements
# helper-91's review (session 46), EQUIVALENT by default before: a chain t < s < u on one dim T in the model, through s on a dim K in the plan (strict masks on [T, K] and [K, T]): the terms with s >= K are missing at the real sizes; both sums over T had one mask_ext, so the product took the larger count.
# Now the real sizes decide (src/exec_pos.c causal_edges); the small copy is bugs/relation_causal_edge_chain.sp.
dim T = 100002
dim K = 100000
model m {
  input w : [T]
  input x : [T]
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
  z = expand(c * 0 + 1, [T, T])
  f = z - causal_mask(z, offset = 0)
  p = sum(f * unsqueeze(w, 1), dim = 0)
  q = sum(f * unsqueeze(x, 0), dim = 1)
  r = sum(p * q)
  output r, acc
}
plan p of m {
  mesh tp = 2
  w : [T]
  x : [T]
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
  g1 = expand(c * 0 + 1, [T, K])
  f1 = g1 - causal_mask(g1, offset = 0)
  g2 = expand(c * 0 + 1, [K, T])
  f2 = g2 - causal_mask(g2, offset = 0)
  p2 = sum(f1 * unsqueeze(w, 1), dim = 0)
  q2 = sum(f2 * unsqueeze(x, 0), dim = 1)
  r2 = sum(p2 * q2)
  output r = r2 : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
