# ring_attention_kv_grad_cp2.sp: the backward of ring-style context parallelism. Each rank takes
# the key/value gradients of its query chunk against every key (partial sums over its queries,
# each with its own softmax scale) and reduce-scatters them over cp. The model's key gradient is
# one sum with the scale outside; the engine proves it by distributing the symbol-free scale and
# flattening the nested sums (docs/soundness.md), where the rational normal forms exceed
# max_terms. GQA: two query heads share the kv head.
# args: --dims S=6,D=2

dim NKV = 1, NH = 2, B = 1, S = 4, D = 2

model att {
  input q : [B, NH, S, D]
  input k : [B, NKV, S, D]
  input v : [B, NKV, S, D]
  input dO : [B, NH, S, D]
  gq = attention_grad_q(q, k, v, dO, causal = 1)
  gk = attention_grad_k(q, k, v, dO, causal = 1)
  gv = attention_grad_v(q, k, v, dO, causal = 1)
  output gq, gk, gv
}

plan att_cp2 of att {
  mesh cp = 2
  q : [B, NH, S@cp, D]
  k : [B, NKV, S@cp, D]
  v : [B, NKV, S@cp, D]
  dO : [B, NH, S@cp, D]
  kf = all_gather(k, 2, cp)
  vf = all_gather(v, 2, cp)
  gq = attention_grad_q(q, kf, vf, dO, causal = 1, offset = rank.cp*(S/cp))
  pk = attention_grad_k(q, kf, vf, dO, causal = 1, offset = rank.cp*(S/cp))
  pv = attention_grad_v(q, kf, vf, dO, causal = 1, offset = rank.cp*(S/cp))
  output gq = gq : [B, NH, S@cp, D]
  output gk = reduce_scatter(pk, 2, sum, cp) : [B, NKV, S@cp, D]
  output gv = reduce_scatter(pv, 2, sum, cp) : [B, NKV, S@cp, D]
}
