# expect: UNKNOWN: limit max-elements
# helper-90's review (session 45): EQUIVALENT by default before session 46 (padded so that no fallback ran it);
# the chain's count now asks for 2m positions, where it counts (docs/soundness.md 'Counts'): the real sizes,
# past max-elements. The small copy is bugs/relation_chain_redchain.sp. docs/soundness.md, 'Positional patterns'.
dim T = 100002
dim S = 100002
dim U = 100002
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
  p = sum(f1 * unsqueeze(w, 1), dim = 0)
  q = sum(f2 * unsqueeze(x, 0), dim = 1)
  r = sum(p * q)
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
  p = sum(f1 * unsqueeze(w, 1), dim = 0)
  q = sum(f2 * unsqueeze(x, 0), dim = 1)
  r = sum(p * q)
  output r = rp : []
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
