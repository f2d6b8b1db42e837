// Loading dense and quantized layers from named tensors.
#include "models/common/weights.h"

#include <algorithm>
#include <cstring>

#include "forge/ops.h"
#include "gpu/runtime.h"
#include "models/common/cache.h"
#include "ops/row_chunks.h"

namespace forge::models {

TensorSource TensorSource::of(const Checkpoint& ckpt) {
  return {[&ckpt](const std::string& n) { return ckpt.contains(n); },
          [&ckpt](const std::string& n) { return ckpt.get(n); }, ckpt.path().string()};
}

TensorSource TensorSource::of(const SafetensorsFile& file) {
  return {[&file](const std::string& n) { return file.contains(n); },
          [&file](const std::string& n) { return file.get(n); }, file.origin()};
}

Tensor load_dense(const TensorSource& src, const std::string& name, const Device& device, DeviceTally& tally) {
  TensorView v = src.get(name);
  Tensor t;
  if (v.dtype() == StDType::F32) {
    // Straight from the mapping: no host copy.
    t = Tensor::from_data(v.bytes.data(), v.shape(), DType::F32, device);
  } else {
    t = Tensor::from_vector(v.to_f32(), v.shape(), device);
  }
  tally.add(t);
  return t;
}

Tensor load_bf16(const TensorSource& src, const std::string& name, bool transpose, const Device& device,
                 DeviceTally& tally) {
  TensorView v = src.get(name);
  Tensor t;
  if (v.dtype() == StDType::BF16 && !transpose) {
    t = Tensor::from_data(v.bytes.data(), v.shape(), DType::BF16, device);
  } else {
    const std::vector<float> f = v.to_f32();
    Shape shape = v.shape();
    const int64_t rows = shape.at(0), cols = shape.at(1);
    if (transpose) shape = {cols, rows};
    std::vector<uint16_t> h(f.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        h[size_t(transpose ? c * rows + r : r * cols + c)] = f32_to_bf16(f[size_t(r * cols + c)]);
    t = Tensor::from_data(h.data(), shape, DType::BF16, device);
  }
  tally.add(t);
  return t;
}

Tensor load_raw(const TensorSource& src, const std::string& name, const Device& device, DeviceTally& tally) {
  TensorView v = src.get(name);
  std::optional<DType> dt = to_dtype(v.dtype());
  if (!dt) throw DTypeError("[weights] tensor '" + name + "' has dtype " + st_dtype_name(v.dtype()) +
                            ", which forge cannot hold, in " + src.origin);
  Tensor t = Tensor::from_data(v.bytes.data(), v.shape(), *dt, device);
  tally.add(t);
  return t;
}

Tensor Linear::operator()(const Tensor& x) const {
  const Tensor* b = bias.defined() ? &bias : nullptr;
  const int64_t rows = x.numel() / in;
  // Few rows (decode) read the packed words directly; many rows (prefill)
  // amortise one dequantization into a temporary and take the tiled matmul,
  // which reuses each weight across rows (measured on the H200: Llama-3.2-1B
  // q4 prefill of 1024 tokens 1047 ms through quantized_matmul).
  constexpr int64_t kDequantizeRows = 16;
  Shape shape = x.shape();
  shape.back() = out;
  const Tensor x2 = x.reshape({rows, in});
  Tensor y;
  if (quant && rows < kDequantizeRows) {
    y = quantized_matmul(x2, q, scales, biases, quant->bits, quant->group_size, b);
  } else if (!quant && conv1d) {
    MatmulOptions o;
    o.bias = b;
    y = matmul(x2, w, o);  // w [in, out]
  } else {
    // Dense f32 or bf16 (which matmul reads as it is), or many rows of a
    // quantized weight dequantized.
    MatmulOptions o;
    o.transpose_b = true;
    o.bias = b;
    y = matmul(x2, quant ? dense_weight() : w, o);
  }
  if (lora.defined()) {
    // Two thin products through the rank: never the dense [out, in] delta.
    MatmulOptions o;
    o.transpose_b = true;
    const Tensor u = matmul(x2, lora.a, o);  // [rows, r]
    o.alpha = lora.scale;
    y = add(y, matmul(u, lora.b, o));  // [rows, out]
  }
  return y.reshape(shape);
}

Tensor Linear::operator()(const Tensor& x, const RowNorm* norm, bool gelu) const {
  if (quant || lora.defined() || x.rank() != 2) {
    const Tensor y = (*this)(norm ? row_norm(x, *norm) : x);
    return gelu ? forge::gelu(y) : y;
  }
  MatmulOptions o;
  o.transpose_b = !conv1d;
  o.bias = bias.defined() ? &bias : nullptr;
  o.norm = norm;
  o.gelu = gelu;
  return matmul(x, w, o);
}

Tensor Linear::qkv_append(const Tensor& x, const RowNorm* norm, Tensor& k_cache, Tensor& v_cache, int64_t at) const {
  if (quant || lora.defined() || !conv1d || w.dtype() != DType::F32 || x.rank() != 2 || k_cache.rank() != 4) {
    const Tensor qkv = (*this)(x, norm);
    const int64_t B = k_cache.rank() == 4 && k_cache.dim(0) > 0 ? k_cache.dim(0) : 1;
    return forge::qkv_append(qkv.reshape({B, qkv.numel() / out / B, out}), k_cache, v_cache, at);
  }
  MatmulOptions o;
  o.bias = bias.defined() ? &bias : nullptr;
  o.norm = norm;
  return forge::qkv_append(x, w, o, k_cache, v_cache, at);
}

Tensor Linear::residual(const Tensor& x, const Tensor& r) const {
  if (quant || lora.defined() || x.rank() != 2) return add(r, (*this)(x));
  MatmulOptions o;
  o.transpose_b = !conv1d;
  o.bias = bias.defined() ? &bias : nullptr;
  o.residual = &r;
  return matmul(x, w, o);
}

namespace {

// Copies the tensors into one new storage, their rows back to back, and
// points each at its view there.
void move_back_to_back(const std::vector<Tensor*>& parts) {
  const Tensor& first = *parts.front();
  Shape shape = first.shape();
  shape[0] = 0;
  for (const Tensor* p : parts) shape[0] += p->dim(0);
  Tensor joined = Tensor::empty(shape, first.dtype(), first.device());
  int64_t at = 0;
  for (Tensor* p : parts) {
    Tensor view = joined.slice_rows(at, at + p->dim(0));
    view.copy_from(*p);
    at += p->dim(0);
    *p = view;
  }
}

// Whether the tensors can share one storage with every part bindable on its
// own: one dtype, device and trailing dims, each a whole number of 256-byte
// blocks, together within a storage binding.
bool can_join(const std::vector<Tensor*>& parts) {
  const Tensor& first = *parts.front();
  uint64_t bytes = 0;
  for (const Tensor* p : parts) {
    if (!p->defined() || p->rank() != first.rank() || p->dtype() != first.dtype() ||
        !(p->device() == first.device()) || p->nbytes() % 256 != 0)
      return false;
    for (int d = 1; d < first.rank(); ++d)
      if (p->dim(d) != first.dim(d)) return false;
    bytes += p->nbytes();
  }
  const Device& dev = first.device();
  return !dev.is_webgpu() || bytes <= dev.runtime().binding_limit();
}

void join(const std::vector<Tensor*>& parts) {
  std::vector<Tensor> values;
  for (const Tensor* p : parts) values.push_back(*p);
  if (can_join(parts) && !Tensor::joined_rows(values).defined()) move_back_to_back(parts);
}

}  // namespace

void join_weights(const std::vector<Linear*>& ls) {
  if (ls.size() < 2) return;
  std::vector<Tensor*> ws, bs;
  for (Linear* l : ls) {
    if (l->quant || l->conv1d || !l->w.defined() || l->w.rank() != 2) return;
    ws.push_back(&l->w);
    if (l->bias.defined()) bs.push_back(&l->bias);
  }
  join(ws);
  // Every Linear's bias too (Qwen2's q/k/v): one product then adds them all.
  if (bs.size() == ls.size()) join(bs);
}

std::optional<JoinedLinears> joined_linears(const std::vector<const Linear*>& ls) {
  if (ls.size() < 2) return std::nullopt;
  std::vector<Tensor> ws, bs;
  for (const Linear* l : ls) {
    if (l->quant || l->conv1d || l->lora.defined()) return std::nullopt;
    ws.push_back(l->w);
    if (l->bias.defined()) bs.push_back(l->bias);
  }
  JoinedLinears j{Tensor::joined_rows(ws), Tensor()};
  if (!j.w.defined()) return std::nullopt;
  if (bs.empty()) return j;
  j.bias = bs.size() == ls.size() ? Tensor::joined_rows(bs) : Tensor();
  if (!j.bias.defined()) return std::nullopt;
  return j;
}

Tensor Linear::dense_weight() const {
  if (quant) return affine_dequantize(q, scales, biases, quant->bits, quant->group_size);
  return w.dtype() == DType::BF16 ? bf16_to_f32(w) : w;
}

std::vector<float> transposed(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> out(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = v[size_t(r * cols + c)];
  return out;
}

void make_dense(Linear& lin, bool conv1d) {
  if (!lin.quant) return;
  const Tensor w = lin.dense_weight();  // [out, in]
  lin.w = conv1d ? Tensor::from_vector(transposed(w.to_vector<float>(), lin.out, lin.in), {lin.in, lin.out}, w.device())
                 : w;
  lin.conv1d = conv1d;
  lin.q = lin.scales = lin.biases = Tensor();
  lin.quant.reset();
}

Tensor Linear::lora_delta() const {
  if (!lora.defined()) throw ValueError("[linear] lora_delta: no adapter attached");
  MatmulOptions o;
  o.alpha = lora.scale;
  if (conv1d && !quant) {
    // (B A)^T = A^T B^T: [in, r] @ [r, out].
    o.transpose_a = true;
    o.transpose_b = true;
    return matmul(lora.a, lora.b, o);
  }
  return matmul(lora.b, lora.a, o);  // [out, r] @ [r, in]
}

bool is_plain(const Linear& l) { return !l.quant && !l.conv1d && !l.bias.defined() && !l.lora.defined(); }

std::vector<Tensor> apply_all(const std::vector<const Linear*>& ls, const Tensor& x, const RowNorm* norm) {
  bool fused = ls.size() <= 3;
  for (const Linear* l : ls) fused = fused && is_plain(*l) && l->w.dtype() == ls.front()->w.dtype();
  std::vector<Tensor> out;
  if (fused) {
    std::vector<Tensor> ws;
    for (const Linear* l : ls) ws.push_back(l->w);
    return matmul_transb_many(x, ws, norm);
  }
  const Tensor h = norm ? row_norm(x, *norm) : x;
  // Many rows through Linears joined with their biases (which
  // matmul_transb_many does not take): one product, its columns split. A
  // few rows keep a product each rather than add the split's copies.
  if (x.rank() == 2 && !fused_rows(x.dim(0)))
    if (const Tensor y = joined_product(ls, h); y.defined()) {
      std::vector<int64_t> widths;
      for (const Linear* l : ls) widths.push_back(l->out);
      return split_columns(y, widths);
    }
  for (const Linear* l : ls) out.push_back((*l)(h));
  return out;
}

Tensor joined_product(const std::vector<const Linear*>& ls, const Tensor& x) {
  const std::optional<JoinedLinears> j = joined_linears(ls);
  if (!j) return Tensor();
  MatmulOptions o;
  o.transpose_b = true;
  o.bias = j->bias.defined() ? &j->bias : nullptr;
  return matmul(x, j->w, o);
}

Tensor silu_gate_of(const Linear& gate, const Linear& up, const Tensor& x, const RowNorm* norm) {
  if (is_plain(gate) && is_plain(up) && gate.w.dtype() == up.w.dtype()) return silu_gate_matmul(x, gate.w, up.w, norm);
  const Tensor h = norm ? row_norm(x, *norm) : x;
  if (x.rank() == 2)
    if (const Tensor gu = joined_product({&gate, &up}, h); gu.defined()) return silu_gate_packed(gu);
  return silu_gate_fused(gate(h), up(h));
}

Linear Linear::load(const TensorSource& src, const std::string& base, int64_t out, int64_t in, bool with_bias,
                    const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally,
                    bool conv1d, DType dense) {
  Linear l;
  l.in = in;
  l.out = out;
  if (quant && src.contains(base + ".scales")) {
    // check_weights validated the shapes against this format.
    l.quant = quant->for_module(base);
    l.q = load_raw(src, base + ".weight", device, tally);
    l.scales = load_raw(src, base + ".scales", device, tally);
    l.biases = load_raw(src, base + ".biases", device, tally);
  } else if (dense == DType::BF16) {
    l.w = load_bf16(src, base + ".weight", conv1d, device, tally);
  } else {
    l.w = load_dense(src, base + ".weight", device, tally);
    l.conv1d = conv1d;
  }
  if (with_bias) l.bias = load_dense(src, base + ".bias", device, tally);
  return l;
}

Tensor Embedding::lookup(const Tensor& ids) const {
  if (is_quantized())
    return affine_embedding(ids, quantized.q, quantized.scales, quantized.biases, quantized.quant->bits,
                            quantized.quant->group_size);
  return embedding_chunked(ids, chunks, chunk_rows);
}

Tensor Embedding::project(const Tensor& x, const RowNorm* norm) const {
  // A vocabulary-sized table is not dequantized whole (it may exceed a
  // storage binding as f32): the product reads the packed words.
  if (is_quantized())
    return quantized_matmul(norm ? row_norm(x, *norm) : x, quantized.q, quantized.scales, quantized.biases,
                            quantized.quant->bits, quantized.quant->group_size);
  return matmul_chunked_transb(x, chunks, 1.0f, norm);
}

Embedding Embedding::load(const TensorSource& src, const std::string& base, int64_t vocab, int64_t width,
                          const std::optional<QuantizationConfig>& quant, const Device& device, DeviceTally& tally) {
  Embedding e;
  e.vocab = vocab;
  e.width = width;
  if (quant && src.contains(base + ".scales")) {
    e.quantized = Linear::load(src, base, vocab, width, false, quant, device, tally);
    return e;
  }
  // Row chunks under the device's binding limit, uploaded straight from the
  // file's bytes (f32) or one f32 copy of them: no second host copy of a
  // table that may be the model's largest tensor.
  const TensorView v = src.get(base + ".weight");
  if (v.numel() != vocab * width)
    throw ShapeError("[weights] " + base + ".weight " + shape_str(v.shape()) + " is not [" + std::to_string(vocab) +
                     ", " + std::to_string(width) + "] in " + src.origin);
  std::vector<float> converted;
  if (v.dtype() != StDType::F32) converted = v.to_f32();
  const auto* data = v.dtype() == StDType::F32 ? reinterpret_cast<const std::byte*>(v.bytes.data())
                                               : reinterpret_cast<const std::byte*>(converted.data());
  const uint64_t row_bytes = uint64_t(width) * sizeof(float);
  const int64_t per = rows_per_binding(vocab, row_bytes, device);
  for (int64_t r = 0; r == 0 || r < vocab; r += per) {
    const int64_t n = std::min(per, vocab - r);
    e.chunks.push_back(Tensor::from_data(data + uint64_t(r) * row_bytes, {n, width}, DType::F32, device));
    tally.add(e.chunks.back());
  }
  e.chunk_rows = e.chunks[0].dim(0);
  return e;
}

std::string dense_dtype_summary(const TensorSource& src, const std::vector<std::string>& names) {
  std::string kind;
  for (const std::string& n : names) {
    if (!src.contains(n)) continue;
    std::string k = st_dtype_name(src.get(n).dtype());
    for (char& c : k) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (kind.empty()) kind = k;
    else if (kind != k) return "mixed";
  }
  return kind;
}

}  // namespace forge::models
