// split_heads, unsplit_head(s), merge_heads, unmerge_heads, split_columns,
// concat_columns, kv_append: shape checks and the strided copy each one is;
// kv_append_tokens as kv_append over one head of every position's values;
// kv_append_rows, one copy per row, or on WebGPU one scatter for a decode
// step's rows.
#include "cpu/gather_kernels.h"
#include "ops/check.h"
#include "webgpu/gather_kernels.h"

namespace forge {

namespace {

std::string S(int64_t v) { return std::to_string(v); }

void run_copy(const char* op, const Tensor& src, const CopyPlan& p, Tensor& dst) {
  if (dst.device().is_cpu()) cpu::strided_copy(src, p, dst);
  else webgpu::strided_copy(op, src, p, dst);
}

// Head-major [B, h, T, hd] geometry of one third of a [B, T, 3C] tensor (or,
// with width C and `third` 0, of a merged [B, T, C] tensor). The copy plan
// walks [B, h, T, hd]; `heads_is_src` picks the direction.
CopyPlan heads_plan(int64_t b, int64_t h, int64_t t, int64_t hd, int64_t width, int64_t third, bool heads_is_src) {
  CopyPlan p;
  p.dims[0] = b;
  p.dims[1] = h;
  p.dims[2] = t;
  p.dims[3] = hd;
  const int64_t heads[3] = {h * t * hd, t * hd, hd};    // [B, h, T, hd], contiguous
  const int64_t rows[3] = {t * width, hd, width};       // [B, T, width], head i at column i * hd
  const int64_t offset = third * h * hd;
  for (int i = 0; i < 3; ++i) {
    p.src_stride[i] = heads_is_src ? heads[i] : rows[i];
    p.dst_stride[i] = heads_is_src ? rows[i] : heads[i];
  }
  (heads_is_src ? p.dst_offset : p.src_offset) = offset;
  return p;
}

struct Heads {
  int64_t b, h, t, hd;
  bool batched;
};

// x [h, T, hd] or [B, h, T, hd].
Heads check_heads(const char* op, const char* name, const Tensor& x) {
  check::same_device(op, {&x});
  check::dtype(op, name, x, DType::F32);
  check::rank(op, name, x, 3, 4);
  bool batched = x.rank() == 4;
  return {batched ? x.dim(0) : 1, x.dim(-3), x.dim(-2), x.dim(-1), batched};
}

Shape rows_shape(const Heads& g, int64_t width) {
  return g.batched ? Shape{g.b, g.t, width} : Shape{g.t, width};
}

Shape heads_shape(const Heads& g) { return g.batched ? Shape{g.b, g.h, g.t, g.hd} : Shape{g.h, g.t, g.hd}; }

// x [T, width] or [B, T, width] split into n_head heads of width / n_head.
Heads check_rows(const char* op, const Tensor& x, int64_t width, int64_t n_head) {
  if (n_head <= 0) throw ValueError(std::string("[") + op + "] n_head must be positive, got " + S(n_head));
  if (width % n_head)
    throw ShapeError(std::string("[") + op + "] width " + S(width) + " of " + shape_str(x.shape()) +
                     " is not divisible by n_head " + S(n_head));
  bool batched = x.rank() == 3;
  return {batched ? x.dim(0) : 1, n_head, x.dim(-2), width / n_head, batched};
}

}  // namespace

QKV split_heads(const Tensor& qkv, int64_t n_head) {
  const char* op = "split_heads";
  check::same_device(op, {&qkv});
  check::dtype(op, "qkv", qkv, DType::F32);
  check::rank(op, "qkv", qkv, 2, 3);
  if (qkv.dim(-1) % 3)
    throw ShapeError("[split_heads] last dim of qkv " + shape_str(qkv.shape()) + " is not 3 * C");
  const int64_t c = qkv.dim(-1) / 3;
  Heads g = check_rows(op, qkv, c, n_head);
  QKV out;
  Tensor* parts[3] = {&out.q, &out.k, &out.v};
  for (int w = 0; w < 3; ++w) {
    *parts[w] = Tensor::empty(heads_shape(g), DType::F32, qkv.device());
    run_copy(op, qkv, heads_plan(g.b, g.h, g.t, g.hd, 3 * c, w, false), *parts[w]);
  }
  return out;
}

Tensor unsplit_head(const Tensor& d, int which) {
  const char* op = "unsplit_head";
  Heads g = check_heads(op, "d", d);
  if (which < 0 || which > 2)
    throw ValueError("[unsplit_head] which must be 0 (q), 1 (k) or 2 (v), got " + S(which) + " for d " +
                     shape_str(d.shape()));
  const int64_t c = g.h * g.hd;
  Tensor out = Tensor::zeros(rows_shape(g, 3 * c), DType::F32, d.device());
  run_copy(op, d, heads_plan(g.b, g.h, g.t, g.hd, 3 * c, which, true), out);
  return out;
}

Tensor unsplit_heads(const Tensor& dq, const Tensor& dk, const Tensor& dv) {
  const char* op = "unsplit_heads";
  check::same_device(op, {&dq, &dk, &dv});
  Heads g = check_heads(op, "dq", dq);
  check::dtype(op, "dk", dk, DType::F32);
  check::dtype(op, "dv", dv, DType::F32);
  if (dk.shape() != dq.shape() || dv.shape() != dq.shape())
    throw ShapeError("[unsplit_heads] dq " + shape_str(dq.shape()) + ", dk " + shape_str(dk.shape()) + ", dv " +
                     shape_str(dv.shape()) + " differ");
  const int64_t c = g.h * g.hd;
  Tensor out = Tensor::empty(rows_shape(g, 3 * c), DType::F32, dq.device());
  const Tensor* parts[3] = {&dq, &dk, &dv};
  for (int w = 0; w < 3; ++w) run_copy(op, *parts[w], heads_plan(g.b, g.h, g.t, g.hd, 3 * c, w, true), out);
  return out;
}

Tensor merge_heads(const Tensor& x) {
  const char* op = "merge_heads";
  Heads g = check_heads(op, "x", x);
  const int64_t c = g.h * g.hd;
  Tensor out = Tensor::empty(rows_shape(g, c), DType::F32, x.device());
  run_copy(op, x, heads_plan(g.b, g.h, g.t, g.hd, c, 0, true), out);
  return out;
}

Tensor unmerge_heads(const Tensor& dy, int64_t n_head) {
  const char* op = "unmerge_heads";
  check::same_device(op, {&dy});
  check::dtype(op, "dy", dy, DType::F32);
  check::rank(op, "dy", dy, 2, 3);
  Heads g = check_rows(op, dy, dy.dim(-1), n_head);
  Tensor out = Tensor::empty(heads_shape(g), DType::F32, dy.device());
  run_copy(op, dy, heads_plan(g.b, g.h, g.t, g.hd, dy.dim(-1), 0, false), out);
  return out;
}

namespace {

// Columns [col, col + w) of a [rows, width] tensor, as a copy plan to or from
// a contiguous [rows, w] one.
CopyPlan columns_plan(int64_t rows, int64_t width, int64_t col, int64_t w, bool block_is_src) {
  CopyPlan p;
  p.dims[2] = rows;
  p.dims[3] = w;
  (block_is_src ? p.src_stride[2] : p.dst_stride[2]) = w;
  (block_is_src ? p.dst_stride[2] : p.src_stride[2]) = width;
  (block_is_src ? p.dst_offset : p.src_offset) = col;
  return p;
}

}  // namespace

std::vector<Tensor> split_columns(const Tensor& x, const std::vector<int64_t>& widths) {
  const char* op = "split_columns";
  check::same_device(op, {&x});
  check::dtype(op, "x", x, DType::F32);
  if (x.rank() < 1) throw ShapeError("[split_columns] x must have at least one dim, got " + x.describe());
  int64_t total = 0;
  for (int64_t w : widths) {
    if (w <= 0) throw ValueError("[split_columns] widths must be positive, got " + S(w));
    total += w;
  }
  if (widths.empty() || total != x.dim(-1))
    throw ShapeError("[split_columns] widths summing to " + S(total) + " for x " + x.describe());
  const int64_t rows = x.numel() / total;
  std::vector<Tensor> out;
  int64_t col = 0;
  for (int64_t w : widths) {
    Shape shape = x.shape();
    shape.back() = w;
    out.push_back(Tensor::empty(shape, DType::F32, x.device()));
    if (rows > 0) run_copy(op, x, columns_plan(rows, total, col, w, false), out.back());
    col += w;
  }
  return out;
}

Tensor concat_columns(const std::vector<Tensor>& parts) {
  const char* op = "concat_columns";
  if (parts.empty()) throw ValueError("[concat_columns] no parts");
  const Tensor& first = parts.front();
  int64_t total = 0;
  for (const Tensor& p : parts) {
    check::same_device(op, {&first, &p});
    check::dtype(op, "part", p, DType::F32);
    bool same = p.rank() == first.rank() && p.rank() >= 1 && p.dim(-1) > 0;
    for (int d = 0; same && d + 1 < p.rank(); ++d) same = p.dim(d) == first.dim(d);
    if (!same)
      throw ShapeError("[concat_columns] part " + p.describe() + " must share the leading dims of " +
                       first.describe() + " and have columns");
    total += p.dim(-1);
  }
  Shape shape = first.shape();
  shape.back() = total;
  Tensor out = Tensor::empty(shape, DType::F32, first.device());
  const int64_t rows = out.numel() / total;
  int64_t col = 0;
  for (const Tensor& p : parts) {
    if (rows > 0) run_copy(op, p, columns_plan(rows, total, col, p.dim(-1), true), out);
    col += p.dim(-1);
  }
  return out;
}

void kv_append(Tensor& cache, const Tensor& src, int64_t len) {
  const char* op = "kv_append";
  check::same_device(op, {&cache, &src});
  check::dtype(op, "cache", cache, DType::F32);
  check::dtype(op, "src", src, DType::F32);
  check::rank(op, "cache", cache, 3, 4);
  Shape want = cache.shape();
  want[size_t(cache.rank() - 2)] = src.rank() == cache.rank() ? src.dim(-2) : 0;
  if (src.shape() != want)
    throw ShapeError("[kv_append] src " + shape_str(src.shape()) + " must match cache " + shape_str(cache.shape()) +
                     " in every dim but the rows");
  const int64_t cap = cache.dim(-2), t = src.dim(-2);
  if (len < 0 || len + t > cap)
    throw ValueError("[kv_append] appending " + S(t) + " rows at row " + S(len) + " overflows the cache " +
                     shape_str(cache.shape()) + " of capacity " + S(cap));
  Heads g{cache.rank() == 4 ? cache.dim(0) : 1, cache.dim(-3), t, cache.dim(-1), cache.rank() == 4};
  CopyPlan p;
  p.dims[0] = g.b;
  p.dims[1] = g.h;
  p.dims[2] = t;
  p.dims[3] = g.hd;
  p.src_stride[0] = g.h * t * g.hd;
  p.src_stride[1] = t * g.hd;
  p.src_stride[2] = g.hd;
  p.dst_stride[0] = g.h * cap * g.hd;
  p.dst_stride[1] = cap * g.hd;
  p.dst_stride[2] = g.hd;
  p.dst_offset = len * g.hd;
  if (cache.device().is_webgpu() && &cache.buffer() == &src.buffer())
    throw DeviceError("[kv_append] src " + src.describe() + " shares its storage with the cache");
  run_copy(op, src, p, cache);
}

void kv_append_tokens(Tensor& cache, const Tensor& src, int64_t at) {
  if (cache.rank() < 3 || src.rank() != cache.rank() || src.dim(0) != cache.dim(0))
    throw ShapeError("[kv_append_tokens] cache " + shape_str(cache.shape()) + " and src " + shape_str(src.shape()) +
                     " must both be [B, positions, ..] of rank >= 3 with the same B");
  for (int64_t d = 2; d < cache.rank(); ++d)
    if (src.dim(d) != cache.dim(d))
      throw ShapeError("[kv_append_tokens] src " + shape_str(src.shape()) + " must match cache " +
                       shape_str(cache.shape()) + " in every dim but the positions");
  const int64_t B = cache.dim(0), cap = cache.dim(1), t = src.dim(1);
  if (at < 0 || at + t > cap)
    throw ValueError("[kv_append_tokens] appending " + S(t) + " positions at " + S(at) + " overflows the cache " +
                     shape_str(cache.shape()) + " of capacity " + S(cap));
  if (src.numel() == 0) return;
  const int64_t D = src.numel() / (B * t);  // elements per position
  Tensor view = cache.reshape({B, 1, cap, D});
  kv_append(view, src.reshape({B, 1, t, D}), at);
}

void kv_append_rows(Tensor& cache, const Tensor& src, int64_t row0, const std::vector<int64_t>& at) {
  const char* op = "kv_append_rows";
  check::same_device(op, {&cache, &src});
  check::dtype(op, "cache", cache, DType::F32);
  check::dtype(op, "src", src, DType::F32);
  if (cache.rank() < 3 || src.rank() != cache.rank())
    throw ShapeError("[kv_append_rows] cache " + shape_str(cache.shape()) + " and src " + shape_str(src.shape()) +
                     " must both be [rows, positions, ..] of rank >= 3");
  for (int64_t d = 2; d < cache.rank(); ++d)
    if (src.dim(d) != cache.dim(d))
      throw ShapeError("[kv_append_rows] src " + shape_str(src.shape()) + " must match cache " +
                       shape_str(cache.shape()) + " in every dim but the first two");
  const int64_t B = cache.dim(0), cap = cache.dim(1), n = src.dim(0), t = src.dim(1);
  const int64_t D = cache.numel() / (B * cap);  // elements per position
  if (int64_t(at.size()) != n)
    throw ValueError("[kv_append_rows] " + S(int64_t(at.size())) + " positions for src " + shape_str(src.shape()));
  if (row0 < 0 || row0 + n > B)
    throw ValueError("[kv_append_rows] rows " + S(row0) + ".." + S(row0 + n - 1) + " outside the cache " +
                     shape_str(cache.shape()));
  if (cache.device().is_webgpu() && &cache.buffer() == &src.buffer())
    throw DeviceError("[kv_append_rows] src " + src.describe() + " shares its storage with the cache");
  for (int64_t i = 0; i < n; ++i)
    if (at[size_t(i)] < 0 || at[size_t(i)] + t > cap)
      throw ValueError("[kv_append_rows] appending " + S(t) + " positions at " + S(at[size_t(i)]) + " to row " +
                       S(row0 + i) + " overflows the cache " + shape_str(cache.shape()) + " of capacity " + S(cap));
  if (cache.device().is_webgpu() && t == 1 && n > 1) {
    // A decode step of n rows: one dispatch instead of n copies (a batch of
    // 32 sequences made these copies a third of a SmolLM2-360M step).
    if ((B * cap) >> 32) throw ValueError("[kv_append_rows] a cache of " + S(B * cap) + " positions exceeds u32 slots");
    std::vector<uint32_t> slots(static_cast<size_t>(n));  // rows of the cache as [B * cap, D]
    for (int64_t i = 0; i < n; ++i) slots[size_t(i)] = uint32_t((row0 + i) * cap + at[size_t(i)]);
    Tensor rows = cache.reshape({B * cap, D});
    webgpu::scatter_set_rows(op, rows, Tensor::from_vector(slots, {n}, cache.device()), src.reshape({n, D}),
                             RowsPlan{n, D, B * cap});
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    CopyPlan p;  // [1, 1, t, D]
    p.dims[2] = t;
    p.dims[3] = D;
    p.src_stride[2] = D;
    p.dst_stride[2] = D;
    p.src_offset = i * t * D;
    p.dst_offset = ((row0 + i) * cap + at[size_t(i)]) * D;
    run_copy(op, src, p, cache);
  }
}

}  // namespace forge
