// Gradients written where the optimizer reads them. AdamW keeps every
// gradient in flat pages (models/common/flat_params.h); a backward pass that
// made fresh tensors had them copied there afterwards, a pass over every
// gradient each step (3.6% of GPT-2 124M's CPU step by `perf`). While a
// GradTargets lives on a thread, the backward there writes each gradient
// slot's first gradient straight into the slot's view in the pages (a
// weight's product through MatmulOptions::out), and AdamW::step finds it in
// place.
#pragma once
#include <functional>
#include <unordered_map>
#include <vector>

#include "forge/tensor.h"

namespace forge::models {

class GradTargets {
 public:
  // slots[i]'s first gradient goes into views[i] (of the gradient's shape).
  // The slots are known by address: the gradient structs holding them must
  // not move or resize while this lives. Scopes nest (the inner one rules).
  GradTargets(const std::vector<Tensor*>& slots, const std::vector<Tensor>& views);
  ~GradTargets();
  GradTargets(const GradTargets&) = delete;
  GradTargets& operator=(const GradTargets&) = delete;

  // The view the empty `slot` takes its first gradient into under the
  // current scope, or nullptr (no scope, or a slot it does not know).
  static const Tensor* find(const Tensor& slot);

 private:
  std::unordered_map<const Tensor*, Tensor> views_;
  GradTargets* outer_;
};

// Whether a and b start at the same byte of one storage (a gradient already
// in its view).
bool same_place(const Tensor& a, const Tensor& b);

// slot += g, or slot = g when slot holds no gradient yet (copied into its
// target view where GradTargets gives one).
void accumulate_grad(Tensor& slot, const Tensor& g);

// A product's gradient into its slot: produce(&slot, true) adds it into the
// slot (MatmulOptions::out with accumulate) when the slot holds one already;
// else slot = produce(into, false) with `into` its target view (nullptr
// where there is none). produce returns its gradient, written into *into
// when given one (or elsewhere: then copied there).
void accumulate_product(Tensor& slot, const std::function<Tensor(Tensor* into, bool accumulate)>& produce);

}  // namespace forge::models
