# A size over a literal used as a value, with a remainder at the real sizes: NH/4 is 9/2 at
# NH = 18, the model's constant. The reduction keeps NH real (before: NOT EQUIVALENT at NH = 5,
# or a detour through the real sizes when the reference executor could run them).
dim NH = 18, H = 4096
model m {
  input x : [NH, H]
  y = x * 9 / 2
  output y
}
plan p of m {
  mesh dp = 1
  x : [NH, H]
  output y = x * (NH / 4) : [NH, H]
}
