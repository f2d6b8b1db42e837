// Building a Gpt2's device weights from host values, shared by loading a
// checkpoint and random initialisation.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "forge/gpt2.h"

namespace forge::gpt2 {

// Values of a tensor by its unprefixed Hugging Face name and expected shape.
using HostSource = std::function<std::vector<float>(const std::string& name, const Shape& shape)>;

// Every tensor the architecture uses, by unprefixed name, with its shape.
std::vector<std::pair<std::string, Shape>> tensor_shapes(const Gpt2Config& c);

// Uploads every tensor from `source` to `device`; wte as binding-sized chunks.
Gpt2Weights build_weights(const Gpt2Config& c, const HostSource& source, const Device& device);

}  // namespace forge::gpt2
