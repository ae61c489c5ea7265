# expect: layout_collective_in_model.sp:6:7: error: collective 'all_reduce' in a model (models run on one device)
# a collective inside the model
dim B = 4, H = 6
model m {
  input x : [B, H]
  y = all_reduce(x, sum, tp)
  output y
}
plan p of m {
  mesh tp = 2
  x : [B, H]
  output y = x : [B, H]
}
