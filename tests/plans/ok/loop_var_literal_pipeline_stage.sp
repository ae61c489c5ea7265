# A correct two-stage pipeline whose stage boundary is the literal layer 16 of L = 32.  With L
# checked at 7 the send at l == 16 never ran and the plan was NOT EQUIVALENT with a "witness"
# at the checked sizes (helper-44's review, session 31); the loop variable compared with a
# literal now keeps L real (src/reduce.c var_uses).

dim L = 32, N = 4

model m {
  input x : [N]
  param w[L] : [N]
  h[0] = x
  for l in 0..L {
    h[l+1] = h[l] * w[l]
  }
  output h[L]
}

plan p of m {
  mesh dp = 160, pp = 2
  x : [N]
  for l in 0..L { w[l] : [N] }
  g = x
  for l in 0..L {
    if l == 16 {
      on pp = 0 { send(g, pp = 1) }
      on pp = 1 { g = recv(pp = 0) }
    }
    if l < 16 {
      on pp = 0 { g = g * w[l] }
    } else {
      on pp = 1 { g = g * w[l] }
    }
  }
  on pp = 1 { output h[L] = g : [N] }
}
