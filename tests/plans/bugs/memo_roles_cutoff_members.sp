# helper-75's first find (session 42): two output stages with one cone up to a renaming of
# symbols, z over three rows of a table at its real size (Newton's identity holds there) and y
# over the members of dp checked as 3 (it holds at three members only). y was memoized onto z
# and its relations test never ran: EQUIVALENT under --mesh-cutoff without the cross-check. The
# memoization key now carries what the count and relations tests read of each symbol and
# compared element (src/members.c sp_members_roles_*), and a stage asking a proved stage's
# question with symbols of other roles runs those tests itself (src/stage.c).
# args: --mesh-cutoff --no-cross-check
# expect: NOT EQUIVALENT at line 40
dim V = 4, E = 1, B = 16
model m {
  input w : [V, E]
  input x : [B, E]
  g = embedding(w, ids = [0, 1, 2])
  t = sum(g, dim = 0)
  z = t * t * t * t
  s = sum(x, dim = 0)
  y = s * s * s * s
  output z
  output y
}
plan p of m {
  mesh dp = 16
  w : [V, E]
  x : [B@dp, E]
  g = embedding(w, ids = [0, 1, 2])
  q1 = sum(g, dim = 0)
  q2 = sum(g * g, dim = 0)
  q3 = sum(g * g * g, dim = 0)
  q4 = sum(g * g * g * g, dim = 0)
  qa = q1 * q1 * q2
  qc = q2 * q2
  z = qa + qa + qa + qa + qa + qa - qc - qc - qc - 8 * q1 * q3 + q4 + q4 + q4 + q4 + q4 + q4
  p1 = all_reduce(sum(x, dim = 0), sum, dp)
  p2 = all_reduce(sum(x * x, dim = 0), sum, dp)
  p3 = all_reduce(sum(x * x * x, dim = 0), sum, dp)
  p4 = all_reduce(sum(x * x * x * x, dim = 0), sum, dp)
  a = p1 * p1 * p2
  c = p2 * p2
  y = a + a + a + a + a + a - c - c - c - 8 * p1 * p3 + p4 + p4 + p4 + p4 + p4 + p4
  output z = z : [E]
  output y = y : [E]
}
