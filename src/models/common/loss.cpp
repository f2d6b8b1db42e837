// The next-token loss every family reports, and the ids shape every forward takes.
#include "forge/model.h"
#include "forge/ops.h"

namespace forge {

Tensor ids_as_batch(const Tensor& ids, const char* who) {
  if (ids.rank() == 1) return ids.reshape({1, ids.dim(0)});
  if (ids.rank() != 2) throw ShapeError(std::string("[") + who + "] ids must be [T] or [B, T], got " + ids.describe());
  return ids;
}

float causal_lm_loss(const Tensor& logits, const Tensor& ids_in) {
  Tensor ids = ids_as_batch(ids_in, "loss");
  const int64_t B = ids.dim(0), T = ids.dim(1), V = logits.dim(-1);
  if (logits.numel() != B * T * V || T < 2)
    throw ShapeError("[loss] needs logits [B, T, V] for ids [B, T] with T >= 2, got logits " + logits.describe() +
                     ", ids " + ids.describe());
  Tensor host_ids = ids.device().is_cpu() ? ids : ids.to(Device::cpu());
  std::vector<uint32_t> labels(static_cast<size_t>(B * T), 0u);  // the last position of each row has no label
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + 1 < T; ++t) {
      const int64_t i = b * T + t + 1;
      labels[size_t(b * T + t)] = host_ids.dtype() == DType::I32 ? uint32_t(host_ids.data<int32_t>()[i])
                                                                  : host_ids.data<uint32_t>()[i];
    }
  Tensor probs = softmax(logits.reshape({B * T, V}));
  std::vector<float> nll = gather_nll(probs, Tensor::from_vector(labels, {B * T})).to_vector<float>();
  double sum = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t + 1 < T; ++t) sum += nll[size_t(b * T + t)];
  return float(sum / double(B * (T - 1)));
}

}  // namespace forge
