# expect: NOT EQUIVALENT at line 84
# helper-90's review (session 45): strict masks on [T, S] and [S, U] of three distinct dims chained (gt(matmul(f1, f2), 1)),
# summed against w[t] x[u]: one element per dim never grew the dims past 3, where u - t - 1 never reaches 2
# (EQUIVALENT by default at 100002: regress/relation_chain_gtchain_large.sp). docs/soundness.md, 'Positional patterns'.
dim T = 8
dim S = 8
dim U = 8
model m {
  input w : [T]
  input x : [U]
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  z3 = expand(c * 0 + 1, [T, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  m3 = z3 - causal_mask(z3, offset = 1)
  rp = sum(w * sum(m3 * unsqueeze(x, 0), dim = 1))
  g = gt(matmul(f1, f2), 1)
  r = sum(w * sum(g * unsqueeze(x, 0), dim = 1))
  r0 = sum(w * 0)
  output r, acc
}
plan p of m {
  mesh tp = 2
  w : [T]
  x : [U]
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  z3 = expand(c * 0 + 1, [T, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  m3 = z3 - causal_mask(z3, offset = 1)
  rp = sum(w * sum(m3 * unsqueeze(x, 0), dim = 1))
  g = gt(matmul(f1, f2), 1)
  r = sum(w * sum(g * unsqueeze(x, 0), dim = 1))
  r0 = sum(w * 0)
  output r = r0 : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
