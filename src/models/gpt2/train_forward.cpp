// The GPT-2 forward pass for training: the same computation as
// Gpt2::forward plus dropout, keeping every activation the backward pass
// reads. Its attention is flash attention, whose log-sum-exp lets the
// backward recompute the probabilities (as the Llama family's training
// does): the same values as the forward's separate ops, to rounding.

#include "forge/gpt2_train.h"
#include "models/gpt2/train_util.h"

namespace forge {

using gpt2::derive_key;

namespace {

enum Site : uint64_t { kEmbd = 1, kAttn = 2, kResid1 = 3, kResid2 = 4 };

Tensor maybe_dropout(const Tensor& x, float p, uint64_t seed) { return p > 0 ? dropout(x, p, seed) : x; }

Tensor ids_u32_cpu(const Tensor& ids) {
  if (ids.rank() != 2) throw ShapeError("[gpt2_train] ids must be [B, T], got " + ids.describe());
  Tensor h = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
  if (h.dtype() == DType::U32) return h;
  if (h.dtype() != DType::I32) throw DTypeError("[gpt2_train] ids must be u32 or i32, got " + ids.describe());
  std::vector<uint32_t> v(size_t(h.numel()));
  const int32_t* p = h.data<int32_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    if (p[i] < 0) throw ValueError("[gpt2_train] negative id " + std::to_string(p[i]) + " at " + std::to_string(i));
    v[i] = uint32_t(p[i]);
  }
  return Tensor::from_vector(v, h.shape());
}

}  // namespace

std::vector<int32_t> gpt2_shifted_targets(const Tensor& ids_in) {
  Tensor ids = ids_u32_cpu(ids_in);
  const int64_t B = ids.dim(0), T = ids.dim(1);
  const uint32_t* p = ids.data<uint32_t>();
  std::vector<int32_t> t(size_t(B * T), -1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i + 1 < T; ++i) t[size_t(b * T + i)] = int32_t(p[b * T + i + 1]);
  return t;
}

Gpt2Activations gpt2_forward_train(const Gpt2& model, const Tensor& ids_in, const Gpt2Dropout& dropout,
                                   uint64_t seed) {
  const Gpt2Config& c = model.config();
  const Gpt2Weights& w = model.weights();
  Gpt2Activations a;
  a.ids = ids_u32_cpu(ids_in);
  a.B = a.ids.dim(0);
  a.T = a.ids.dim(1);
  a.dropout = dropout;
  const int64_t B = a.B, T = a.T, C = c.n_embd, nh = c.n_head, N = B * T;
  if (T < 1 || T > c.n_positions)
    throw ValueError("[gpt2_train] sequence length " + std::to_string(T) + " must lie in 1.." +
                     std::to_string(c.n_positions) + " (n_positions)");
  const float eps = float(c.layer_norm_epsilon);

  a.seed_embd = derive_key(seed, kEmbd);
  Tensor x = maybe_dropout(model.embed(a.ids, 0), dropout.embd,
                           a.seed_embd);  // [B, T, C]
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const Gpt2Block& b = w.h[size_t(l)];
    Gpt2BlockActs s;
    s.seed_attn = derive_key(seed, kAttn, uint64_t(l));
    s.seed_resid1 = derive_key(seed, kResid1, uint64_t(l));
    s.seed_resid2 = derive_key(seed, kResid2, uint64_t(l));
    s.x_in = x;
    s.ln1 = layernorm(x, b.ln_1_w, b.ln_1_b, eps).reshape({N, C});
    // Attention reads q, k and v inside the joined product (no split copies
    // where the kernels take them in place).
    s.qkv = b.c_attn(s.ln1).reshape({B, T, 3 * C});
    const AttentionForward f = flash_attention_v2_packed_lse(s.qkv, nh, nh, gpt2::train_attention(dropout, s));
    s.lse = f.lse;
    s.y = f.out.reshape({N, C});
    // The residual adds stay ops of their own: in the tiles' store
    // (Linear::residual, as inference has it) the attention projection's
    // product at 8192 rows ran 20x slower on an H100 (0.23 -> 5.0 ms). The
    // slow kernel is the one that runs its last wave in pieces over k
    // (matmul_pieces.wgsl) with the residual in its store; written-out
    // stores did not cure it and slowed the other products (README).
    Tensor proj = maybe_dropout(b.attn_proj(s.y), dropout.resid, s.seed_resid1);
    s.x1 = add(x, proj.reshape({B, T, C}));
    s.ln2 = layernorm(s.x1, b.ln_2_w, b.ln_2_b, eps).reshape({N, C});
    s.fc = b.fc(s.ln2);
    s.fc_gelu = gelu(s.fc);
    Tensor mlp = maybe_dropout(b.mlp_proj(s.fc_gelu), dropout.resid, s.seed_resid2);
    x = add(s.x1, mlp.reshape({B, T, C}));
    a.h.push_back(std::move(s));
  }
  a.x_out = x;
  a.lnf = layernorm(x, w.ln_f_w, w.ln_f_b, eps).reshape({N, C});
  return a;
}

}  // namespace forge
