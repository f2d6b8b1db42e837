// Parameters, gradients and AdamW moments in flat buffers ("pages"), so that
// the gradient norm, the clip and the update are one dispatch per page (a
// page spans up to one storage binding) instead of one per tensor.
//
// The parameters' storages move into the pages (Tensor::move_storage_into):
// every handle to them, the model's included, then reads and writes there, so
// the models need no change. The trainers' backward passes write the
// gradients into the flat gradient pages (models/common/grad_targets.h); a
// gradient made elsewhere is copied in once per step (a device copy, not a
// dispatch).
#pragma once
#include <string>
#include <vector>

#include "forge/train.h"

namespace forge {

struct FlatPage {
  // f32 [n] each, one layout: the parameters' storages at 256-byte aligned
  // offsets, the gaps zero in g (the norm reads every element).
  Tensor w, g, m, v;
  Tensor segments;  // u32 [S, 3]: (begin, end, decay) of each parameter, sorted
  std::vector<std::string> names;  // of the segments' parameters, for messages
};

struct FlatParams {
  std::vector<FlatPage> pages;
  // Per parameter, views into the pages shaped as the parameter.
  std::vector<Tensor> g, m, v;
};

// Moves the storages of `params` (f32, one device, no two sharing elements)
// into fresh pages of at most the device's storage binding limit (a larger
// storage gets a page of its own) with zeroed g, m, v. decay[i]: whether
// parameter i gets weight decay. ValueError / DTypeError naming the
// parameter otherwise, prefixed by `who`.
FlatParams flatten_params(const std::vector<NamedTensor>& params, const std::vector<bool>& decay,
                          const std::string& who);

}  // namespace forge
