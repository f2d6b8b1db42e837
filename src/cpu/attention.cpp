// Flash attention on the CPU: the reference loops. Each (batch, head, query)
// row computes its visible scores in double, the softmax in double and the
// dropout decisions from the same Philox stream as forge::dropout.
#include <cmath>
#include <vector>

#include "cpu/attention_kernels.h"
#include "cpu/isa_clones.h"
#include "cpu/lanes.h"
#include "cpu/parallel.h"
#include "cpu/philox.h"
#include "cpu/vec_math.h"

namespace forge::cpu {

namespace {

// Reads of one (b, h, i) row's operands.
struct Rows {
  const AttentionPlan& p;
  const float* q;     // [B, Sq, H, D]
  const float* k;     // [B, Sk, Hkv, D]
  const float* v;     // [B, Sk, Hkv, D]
  const float* mask;  // per plan strides, or null

  const float* qrow(int64_t b, int64_t i, int64_t h) const { return q + ((b * p.seq_q + i) * p.heads + h) * p.head_dim; }
  const float* krow(const float* base, int64_t b, int64_t j, int64_t g) const {
    return base + ((b * p.seq_k + j) * p.kv_heads + g) * p.head_dim;
  }
  // The scaled score of (b, h, i, j), or -inf when j is not visible to i.
  double score(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const float* qr = qrow(b, i, h);
    const float* kr = krow(k, b, j, h / p.group());
    // Lanes: independent chains the compiler can pipeline (a decode step
    // scores every cached key of every head here).
    double s = double(p.scale) * lane_sum(p.head_dim, [&](int64_t d) { return double(qr[d]) * double(kr[d]); });
    if (mask) s += double(mask[b * p.mask_sb + h * p.mask_sh + i * p.mask_si + j * p.mask_sj]);
    return s > double(kAttentionMaskedScore) ? s : -INFINITY;
  }
  // The dropout factor of (b, h, i, j): 0 or drop_scale (1 without dropout).
  double keep(int64_t b, int64_t h, int64_t i, int64_t j) const {
    if (!p.dropout) return 1.0;
    uint64_t idx = uint64_t((b * p.heads + h) * p.seq_q + i) * uint64_t(p.seq_k) + uint64_t(j);
    uint32_t r = philox_word0(uint32_t(idx), uint32_t(idx >> 32), uint32_t(p.seed), uint32_t(p.seed >> 32));
    return r >= p.threshold ? double(p.drop_scale) : 0.0;
  }
};

// Forward of the (batch, head) pairs [lo_bh, hi_bh): each writes its own rows
// of out and lse.
FORGE_ISA_CLONES void forward_pairs(const Rows& r, float* po, float* pl, int64_t lo_bh, int64_t hi_bh) {
  const AttentionPlan& p = r.p;
  const int64_t D = p.head_dim;
  std::vector<double> s(static_cast<size_t>(p.seq_k)), acc(static_cast<size_t>(D));
  for (int64_t bh = lo_bh; bh < hi_bh; ++bh) {
    const int64_t b = bh / p.heads, h = bh % p.heads;
    for (int64_t i = 0; i < p.seq_q; ++i) {
      const int64_t lo = p.key_lo(i), hi = p.key_hi(i), g = h / p.group();
      double m = -INFINITY;
      for (int64_t j = lo; j < hi; ++j) m = std::max(m, s[size_t(j)] = r.score(b, h, i, j));
      float* orow = po + ((b * p.seq_q + i) * p.heads + h) * D;
      float& l = pl[(b * p.heads + h) * p.seq_q + i];
      if (m == -INFINITY) {  // nothing visible: zeros
        for (int64_t d = 0; d < D; ++d) orow[d] = 0.0f;
        l = -INFINITY;
        continue;
      }
      for (int64_t j = lo; j < hi; ++j) s[size_t(j)] = vm::exp(s[size_t(j)] - m);
      const double sum = lane_sum(hi - lo, [&](int64_t j) { return s[size_t(lo + j)]; });
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = lo; j < hi; ++j) {
        double w = s[size_t(j)] / sum * r.keep(b, h, i, j);
        if (w == 0.0) continue;
        const float* vr = r.krow(r.v, b, j, g);
        for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w * double(vr[d]);
      }
      for (int64_t d = 0; d < D; ++d) orow[d] = float(acc[size_t(d)]);
      l = float(m + std::log(sum));
    }
  }
}

// Backward of the (batch, kv head) pairs [lo_bg, hi_bg): a pair owns its rows
// of dk and dv (double) and the dq rows of its query heads; within a pair the
// sums run in the serial order (heads, then queries).
FORGE_ISA_CLONES void backward_pairs(const Rows& r, const float* po, const float* pdo, const float* pl, double* dk,
                                     double* dv, float* gq, int64_t lo_bg, int64_t hi_bg) {
  const AttentionPlan& p = r.p;
  const int64_t D = p.head_dim;
  std::vector<double> dq(static_cast<size_t>(D));
  for (int64_t bg = lo_bg; bg < hi_bg; ++bg) {
    const int64_t b = bg / p.kv_heads, g = bg % p.kv_heads;
    for (int64_t h = g * p.group(); h < (g + 1) * p.group(); ++h) {
      for (int64_t i = 0; i < p.seq_q; ++i) {
        const int64_t lo = p.key_lo(i), hi = p.key_hi(i);
        const int64_t row = (b * p.seq_q + i) * p.heads + h;
        const float* dorow = pdo + row * D;
        const float* qr = r.qrow(b, i, h);
        const double l = double(pl[(b * p.heads + h) * p.seq_q + i]);
        // delta = sum_j P_ij dP_ij = dO_i . O_i (dropout included).
        const double delta = lane_sum(D, [&](int64_t d) { return double(dorow[d]) * double(po[row * D + d]); });
        std::fill(dq.begin(), dq.end(), 0.0);
        for (int64_t j = lo; j < hi; ++j) {
          double s = r.score(b, h, i, j);
          if (s == -INFINITY) continue;
          double pr = vm::exp(s - l), z = r.keep(b, h, i, j);
          const float* kr = r.krow(r.k, b, j, g);
          const float* vr = r.krow(r.v, b, j, g);
          const int64_t kv = ((b * p.seq_k + j) * p.kv_heads + g) * D;
          const double dpd = lane_sum(D, [&](int64_t d) { return double(dorow[d]) * double(vr[d]); });
          double ds = pr * (dpd * z - delta);
          for (int64_t d = 0; d < D; ++d) {
            dv[kv + d] += pr * z * double(dorow[d]);
            dq[size_t(d)] += ds * double(kr[d]);
            dk[kv + d] += ds * double(qr[d]);
          }
        }
        for (int64_t d = 0; d < D; ++d) gq[row * D + d] = float(dq[size_t(d)] * double(p.scale));
      }
    }
  }
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask,
                       const AttentionPlan& p, Tensor& out, Tensor& lse) {
  const Rows r{p, q.data<float>(), k.data<float>(), v.data<float>(), mask ? mask->data<float>() : nullptr};
  float* po = out.data<float>();
  float* pl = lse.data<float>();
  // (batch, head) pairs write disjoint rows of out and lse: split over threads.
  parallel_for(p.batch * p.heads, p.seq_q * p.seq_k * p.head_dim,
               [&](int64_t lo_bh, int64_t hi_bh) { forward_pairs(r, po, pl, lo_bh, hi_bh); });
}

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                        const Tensor& grad_out, const Tensor& lse, const AttentionPlan& p, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v) {
  const Rows r{p, q.data<float>(), k.data<float>(), v.data<float>(), mask ? mask->data<float>() : nullptr};
  const float* po = out.data<float>();
  const float* pdo = grad_out.data<float>();
  const float* pl = lse.data<float>();
  std::vector<double> dk(static_cast<size_t>(k.numel())), dv(static_cast<size_t>(v.numel()));
  float* gq = grad_q.data<float>();
  // (batch, kv head) pairs split over threads: the same sums whatever the
  // thread count.
  parallel_for(p.batch * p.kv_heads, p.group() * p.seq_q * p.seq_k * p.head_dim, [&](int64_t lo_bg, int64_t hi_bg) {
    backward_pairs(r, po, pdo, pl, dk.data(), dv.data(), gq, lo_bg, hi_bg);
  });
  float* gk = grad_k.data<float>();
  float* gv = grad_v.data<float>();
  for (size_t e = 0; e < dk.size(); ++e) {
    gk[e] = float(dk[e] * double(p.scale));
    gv[e] = float(dv[e]);
  }
}

}  // namespace forge::cpu
