# expect: NOT EQUIVALENT at line 87
# helper-89's review (session 45): EQUIVALENT by default on dd789aa: the same masks broadcast to
# [T, S, U] by adding a zero tensor, then multiplied. Now the added operand's axes follow the
# broadcast (src/ops.c axes_aligned) and the product sums the two counts.
dim T = 100002
dim S = 100002
dim U = 100002
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  zz = expand(c * 0, [T, S, U])
  a = unsqueeze(f1, 2) + zz
  b = unsqueeze(f2, 0) + zz
  g = a * b
  p1 = sum(g * unsqueeze(unsqueeze(x, 0), 2), dim = 1)
  p2 = sum(g * unsqueeze(unsqueeze(x * x, 0), 2), dim = 1)
  tt13 = p2
  tt14 = p1*p1
  e = tt14 - tt13
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
  z1 = expand(c * 0 + 1, [T, S])
  z2 = expand(c * 0 + 1, [S, U])
  f1 = z1 - causal_mask(z1, offset = 0)
  f2 = z2 - causal_mask(z2, offset = 0)
  zz = expand(c * 0, [T, S, U])
  a = unsqueeze(f1, 2) + zz
  b = unsqueeze(f2, 0) + zz
  g = a * b
  p1 = sum(g * unsqueeze(unsqueeze(x, 0), 2), dim = 1)
  p2 = sum(g * unsqueeze(unsqueeze(x * x, 0), 2), dim = 1)
  yy = p1
  output y = yy : [T, U]
  output acc = acc : [2, 2, 2, 2, 2, 2, 2, 2]
}
