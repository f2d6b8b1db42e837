// Flash attention on the CPU. Each (batch, head, query) row takes its softmax
// in double and its dropout decisions from the same Philox stream as
// forge::dropout. Its scores are dot products in double where there are few
// queries (decode); the forward and backward of longer query runs (prefill,
// training) take their products (Q K^T, P V, dO V^T, dV, dQ, dK) as sgemms
// by blocks of queries.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "cpu/attention_kernels.h"
#include "cpu/isa_clones.h"
#include "cpu/kernels.h"
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
    return masked(b, h, i, j, lane_sum(p.head_dim, [&](int64_t d) { return double(qr[d]) * double(kr[d]); }));
  }
  // The score of (b, h, i, j) from its dot product q . k: scaled, the mask
  // added, -inf when masked out.
  double masked(int64_t b, int64_t h, int64_t i, int64_t j, double dot) const {
    double s = double(p.scale) * dot;
    if (mask) s += double(mask[b * p.mask_sb + h * p.mask_sh + i * p.mask_si + j * p.mask_sj]);
    return visible(s) ? s : -INFINITY;
  }
  // Whether a score (scaled, the mask added) counts: above the masked score,
  // and not NaN.
  static bool visible(double s) { return s > double(kAttentionMaskedScore); }
  // Neither a mask nor dropout: a row's scores are scale * dot alone, and
  // its loops take the branch-free forms below, which vectorize (the
  // general ones call masked and keep for every score: scalar code).
  bool plain() const { return !mask && !p.dropout; }
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

// Query rows a block takes; from kBlockedMinQueries queries on the forward
// and the backward go by blocks (a decode step's one query stays with
// forward_pairs, whose sgemv-free dots read each key once).
constexpr int64_t kQueryBlock = 64;
constexpr int64_t kBlockedMinQueries = 16;

// Queries [i0, i1) of one block and the keys [klo, klo + n) that some row of
// it sees (key_lo and key_hi grow with i).
struct QueryBlock {
  int64_t i0, i1, klo, n;

  QueryBlock(const AttentionPlan& p, int64_t first)
      : i0(first), i1(std::min(p.seq_q, first + kQueryBlock)), klo(p.key_lo(first)),
        n(std::max<int64_t>(0, p.key_hi(i1 - 1) - klo)) {}
  int64_t rows() const { return i1 - i0; }
  // Row i's keys [lo, hi) within the block's, as offsets from klo (empty
  // where a window starts past the last key).
  std::pair<int64_t, int64_t> keys(const AttentionPlan& p, int64_t i) const {
    const int64_t lo = std::min(p.key_lo(i) - klo, n);
    return {lo, std::clamp(p.key_hi(i) - klo, lo, n)};
  }
  // out [rows, n] = a [rows, D] (row stride heads * D) x the block's rows of
  // a key-major operand [n, D] (row stride kv_heads * D)^T: S = Q K^T, and
  // dP = dO V^T in the backward.
  void times_keys(const AttentionPlan& p, const float* a, const float* keys, float* out) const {
    MatmulPlan t;
    t.m = rows(), t.n = n, t.k = p.head_dim, t.trans_b = true, t.lda = p.heads * p.head_dim;
    t.ldb = p.kv_heads * p.head_dim;
    gemm_on_thread(t, a, keys, out, n, false);
  }
};

// The forward by blocks of query rows, for prefill and training shapes where
// forward_pairs's one dot product a score runs about 20x below the sgemm's
// speed: per (batch, head, block of queries), S = Q K^T over the block's key
// range and O = P V, each one sgemm on this thread (row strides of the
// token-major operands, no copies); between them each row's softmax in
// double as forward_pairs takes it (scale, mask, max, exp, sum, dropout), P
// rounded to f32 for the second product.
FORGE_ISA_CLONES void forward_blocks(const Rows& r, float* po, float* pl, int64_t lo_item, int64_t hi_item) {
  const AttentionPlan& p = r.p;
  const int64_t D = p.head_dim, blocks = (p.seq_q + kQueryBlock - 1) / kQueryBlock;
  const bool plain = r.plain();
  const double scale = double(p.scale);
  std::vector<float> probs;   // [rows, n]: S, then P
  std::vector<double> score;  // [n]: one row's scores, then exps
  for (int64_t item = lo_item; item < hi_item; ++item) {
    const int64_t bh = item / blocks, b = bh / p.heads, h = bh % p.heads, g = h / p.group();
    const QueryBlock blk(p, item % blocks * kQueryBlock);
    const int64_t i0 = blk.i0, i1 = blk.i1, rows = blk.rows(), klo = blk.klo, n = blk.n;
    float* out_rows = po + ((b * p.seq_q + i0) * p.heads + h) * D;  // row stride heads * D
    if (n == 0) {
      for (int64_t i = i0; i < i1; ++i) {
        std::fill(out_rows + (i - i0) * p.heads * D, out_rows + (i - i0) * p.heads * D + D, 0.0f);
        pl[(b * p.heads + h) * p.seq_q + i] = -INFINITY;
      }
      continue;
    }
    probs.resize(size_t(rows * n));
    score.resize(size_t(n));
    blk.times_keys(p, r.qrow(b, i0, h), r.krow(r.k, b, klo, g), probs.data());
    for (int64_t i = i0; i < i1; ++i) {
      float* row = probs.data() + (i - i0) * n;  // keys klo + [0, n)
      const std::pair<int64_t, int64_t> keys = blk.keys(p, i);
      const int64_t lo = keys.first, hi = keys.second;  // named: the lambdas below capture them
      double m = -INFINITY;
      if (plain) {  // masked() without a mask, in a form that vectorizes
        for (int64_t j = lo; j < hi; ++j) {
          const double s = scale * double(row[j]);
          score[size_t(j)] = Rows::visible(s) ? s : -INFINITY;
        }
        m = lane_max(score.data() + lo, hi - lo);
      } else {
        for (int64_t j = lo; j < hi; ++j) m = std::max(m, score[size_t(j)] = r.masked(b, h, i, klo + j, row[j]));
      }
      float& l = pl[(b * p.heads + h) * p.seq_q + i];
      if (m == -INFINITY) {  // nothing visible: a zero row of P gives zeros
        std::fill(row, row + n, 0.0f);
        l = -INFINITY;
        continue;
      }
      for (int64_t j = lo; j < hi; ++j) score[size_t(j)] = vm::exp(score[size_t(j)] - m);
      const double sum = lane_sum(hi - lo, [&](int64_t j) { return score[size_t(lo + j)]; });
      std::fill(row, row + lo, 0.0f);
      if (plain) {
        for (int64_t j = lo; j < hi; ++j) row[j] = float(score[size_t(j)] / sum);
      } else {
        for (int64_t j = lo; j < hi; ++j) row[j] = float(score[size_t(j)] / sum * r.keep(b, h, i, klo + j));
      }
      std::fill(row + hi, row + n, 0.0f);
      l = float(m + std::log(sum));
    }
    MatmulPlan pv;  // [rows, n] x [n, D]
    pv.m = rows, pv.n = D, pv.k = n, pv.lda = n, pv.ldb = p.kv_heads * D;
    gemm_on_thread(pv, probs.data(), r.krow(r.v, b, klo, g), out_rows, p.heads * D, false);
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

// The backward by blocks of query rows (the forward_blocks counterpart), for
// a (batch, kv head) pair's heads [lo_bg, hi_bg): it owns its rows of dk and
// dv (f32, accumulated over its heads and blocks by sgemm) and its heads'
// rows of dq. Per block of queries: S = Q K^T and dP = dO V^T, then row by
// row P = exp(S - lse) with the dropout factor Z and dS = P (dP Z - delta)
// in double, then dV += (P Z)^T dO, dQ = scale dS K and dK += scale dS^T Q.
FORGE_ISA_CLONES void backward_blocks(const Rows& r, const float* po, const float* pdo, const float* pl, float* gq,
                                      float* gk, float* gv, int64_t lo_bg, int64_t hi_bg) {
  const AttentionPlan& p = r.p;
  const int64_t D = p.head_dim;
  const int64_t q_stride = p.heads * D, kv_stride = p.kv_heads * D;  // row strides
  const bool plain = r.plain();
  const double scale = double(p.scale);
  std::vector<float> probs, dprobs;  // [rows, n]: S then P Z; dP then dS
  std::vector<double> arg;           // [n]: one row's S - lse (plain)
  for (int64_t bg = lo_bg; bg < hi_bg; ++bg) {
    const int64_t b = bg / p.kv_heads, g = bg % p.kv_heads;
    float* dk_rows = gk + (b * p.seq_k * p.kv_heads + g) * D;
    float* dv_rows = gv + (b * p.seq_k * p.kv_heads + g) * D;
    for (int64_t j = 0; j < p.seq_k; ++j) {
      std::fill(dk_rows + j * kv_stride, dk_rows + j * kv_stride + D, 0.0f);
      std::fill(dv_rows + j * kv_stride, dv_rows + j * kv_stride + D, 0.0f);
    }
    for (int64_t h = g * p.group(); h < (g + 1) * p.group(); ++h) {
      for (int64_t first_query = 0; first_query < p.seq_q; first_query += kQueryBlock) {
        const QueryBlock blk(p, first_query);
        const int64_t i0 = blk.i0, i1 = blk.i1, rows = blk.rows(), klo = blk.klo, n = blk.n;
        const int64_t first = (b * p.seq_q + i0) * p.heads + h;  // the block's first row of q, o, do, dq
        float* dq_rows = gq + first * D;
        if (n == 0) {
          for (int64_t i = 0; i < rows; ++i) std::fill(dq_rows + i * q_stride, dq_rows + i * q_stride + D, 0.0f);
          continue;
        }
        probs.resize(size_t(rows * n));
        dprobs.resize(size_t(rows * n));
        arg.resize(size_t(n));
        blk.times_keys(p, r.qrow(b, i0, h), r.krow(r.k, b, klo, g), probs.data());
        blk.times_keys(p, pdo + first * D, r.krow(r.v, b, klo, g), dprobs.data());
        for (int64_t i = i0; i < i1; ++i) {
          float* pz = probs.data() + (i - i0) * n;
          float* ds = dprobs.data() + (i - i0) * n;
          const std::pair<int64_t, int64_t> keys = blk.keys(p, i);
          const int64_t lo = keys.first, hi = keys.second;
          const int64_t row = first + (i - i0) * p.heads;
          const double l = double(pl[(b * p.heads + h) * p.seq_q + i]);
          // delta = sum_j P_ij dP_ij = dO_i . O_i (dropout included).
          const double delta = lane_sum(D, [&](int64_t d) { return double(pdo[row * D + d]) * double(po[row * D + d]); });
          std::fill(pz, pz + lo, 0.0f);
          std::fill(ds, ds + lo, 0.0f);
          if (plain) {  // the loop below with no mask and z = 1, in two loops that vectorize
            for (int64_t j = lo; j < hi; ++j) {
              const double s = scale * double(pz[j]);
              arg[size_t(j)] = Rows::visible(s) ? s - l : -INFINITY;  // exp(-inf) = 0
            }
            for (int64_t j = lo; j < hi; ++j) {
              const double pr = vm::exp(arg[size_t(j)]);
              pz[j] = float(pr);
              ds[j] = float(pr * (double(ds[j]) - delta));
            }
          } else {
            for (int64_t j = lo; j < hi; ++j) {
              const double s = r.masked(b, h, i, klo + j, pz[j]);
              const double pr = s == -INFINITY ? 0.0 : vm::exp(s - l), z = r.keep(b, h, i, klo + j);
              pz[j] = float(pr * z);
              ds[j] = float(pr * (double(ds[j]) * z - delta));
            }
          }
          std::fill(pz + hi, pz + n, 0.0f);
          std::fill(ds + hi, ds + n, 0.0f);
        }
        MatmulPlan dv;  // [n, rows] (P Z stored [rows, n]) x [rows, D]
        dv.m = n, dv.n = D, dv.k = rows, dv.trans_a = true, dv.lda = n, dv.ldb = q_stride;
        gemm_on_thread(dv, probs.data(), pdo + first * D, dv_rows + klo * kv_stride, kv_stride, true);
        MatmulPlan dq;  // scale [rows, n] x [n, D]
        dq.m = rows, dq.n = D, dq.k = n, dq.lda = n, dq.ldb = kv_stride, dq.alpha = p.scale;
        gemm_on_thread(dq, dprobs.data(), r.krow(r.k, b, klo, g), dq_rows, q_stride, false);
        MatmulPlan dk = dv;  // scale [n, rows] (dS stored [rows, n]) x [rows, D]
        dk.alpha = p.scale;
        gemm_on_thread(dk, dprobs.data(), r.qrow(b, i0, h), dk_rows + klo * kv_stride, kv_stride, true);
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
  // Items write disjoint rows of out and lse: split over threads.
  if (p.seq_q >= kBlockedMinQueries) {
    const int64_t blocks = (p.seq_q + kQueryBlock - 1) / kQueryBlock;
    parallel_for(p.batch * p.heads * blocks, kQueryBlock * p.seq_k * p.head_dim,
                 [&](int64_t lo, int64_t hi) { forward_blocks(r, po, pl, lo, hi); });
    return;
  }
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
  if (p.seq_q >= kBlockedMinQueries) {
    float* gq = grad_q.data<float>();
    float* gk = grad_k.data<float>();
    float* gv = grad_v.data<float>();
    parallel_for(p.batch * p.kv_heads, p.group() * p.seq_q * p.seq_k * p.head_dim, [&](int64_t lo, int64_t hi) {
      backward_blocks(r, po, pdo, pl, gq, gk, gv, lo, hi);
    });
    return;
  }
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
