#include "models/common/grad_targets.h"

#include "forge/error.h"
#include "forge/ops.h"

namespace forge::models {

namespace {
thread_local GradTargets* current = nullptr;
}  // namespace

GradTargets::GradTargets(const std::vector<Tensor*>& slots, const std::vector<Tensor>& views) : outer_(current) {
  if (slots.size() != views.size())
    throw ValueError("[grad_targets] " + std::to_string(slots.size()) + " gradient slots for " +
                     std::to_string(views.size()) + " target views");
  for (size_t i = 0; i < slots.size(); ++i) views_.emplace(slots[i], views[i]);
  current = this;
}

GradTargets::~GradTargets() { current = outer_; }

const Tensor* GradTargets::find(const Tensor& slot) {
  if (!current) return nullptr;
  const auto it = current->views_.find(&slot);
  return it == current->views_.end() ? nullptr : &it->second;
}

bool same_place(const Tensor& a, const Tensor& b) {
  return a.storage_id() == b.storage_id() && a.byte_offset() == b.byte_offset();
}

namespace {

// The empty slot's first gradient g, moved into `target` unless written there.
void first_gradient(Tensor& slot, const Tensor* target, const Tensor& g) {
  if (!target || same_place(g, *target)) {
    slot = g;
    return;
  }
  Tensor view = *target;
  view.copy_from(g);  // ShapeError when g is not the view's shape
  slot = view;
}

}  // namespace

void accumulate_grad(Tensor& slot, const Tensor& g) {
  if (slot.defined()) gradient_accumulate(slot, g);
  else first_gradient(slot, GradTargets::find(slot), g);
}

void accumulate_product(Tensor& slot, const std::function<Tensor(Tensor* into, bool accumulate)>& produce) {
  if (slot.defined()) {
    const Tensor sum = produce(&slot, true);
    if (!same_place(sum, slot)) throw ValueError("[grad_targets] a product accumulated outside its gradient slot");
    return;
  }
  const Tensor* target = GradTargets::find(slot);
  Tensor view = target ? *target : Tensor();
  first_gradient(slot, target, produce(target ? &view : nullptr, false));
}

}  // namespace forge::models
