# expect: NOT EQUIVALENT at line 28
# Gradient clipping's norm is a sum over every gradient element (helper-60's review of the
# sizes-as-values change): with grad.b all ones it is the count N, which the plan writes as the
# checked count (g*2 + g*3 = 5 at N = 5; 60000 at the real N).  The sum was no marked sum, so
# the count test did not see it, and the check was EQUIVALENT by default (q : [65537], a
# literal shape, keeps the reference runs off).  It is marked now (src/autodiff.c), and the
# stage that counts goes to the real sizes.
# model: sgd with gradient clipping; grad.b = 1 on all N elements, so ||g|| = sqrt(N) = sqrt(60000)
dim N = 60000
model m {
  input q : [65537]
  param b : [N]
  loss = sum(b)
  z = q * 2
  output loss, z
  train sgd(lr = 1, clip = 1)
}
plan p of m {
  mesh dp = 1
  q : [65537]
  b : [N]
  loss = sum(b)
  g = b * 0 + 1
  s = minimum(g, 1 / (sqrt(g * 2 + g * 3) + 1/1000000))
  output loss = loss : []
  output z = q * 2 : [65537]
  output grad.b = g : [N]
  output next.b = b - g * s : [N]
}
