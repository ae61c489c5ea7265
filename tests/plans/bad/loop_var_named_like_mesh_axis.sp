# expect: loop_var_named_like_mesh_axis.sp:16:7: error: 'tp' is a mesh axis; a tensor, loop variable or parameter cannot take its name
# A loop variable named like a mesh axis: `rank.tp` and a collective's `tp` name the axis, the
# loop's `tp` a value; the name must mean one thing (docs/soundness.md, "Names").
dim N = 8, H = 4

model m {
  input x : [N, H]
  y = x * 3
  output y
}

plan p of m {
  mesh tp = 2
  x : [N@tp, H]
  y = x
  for tp in 0..2 {
    y = y + x
  }
  output y = y : [N@tp, H]
}
