// Building a Gpt2's device weights from host values, shared by loading a
// checkpoint and random initialisation.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "forge/gpt2.h"

namespace forge::gpt2 {

// Values of a tensor by its unprefixed Hugging Face name and expected shape.
using HostSource = std::function<std::vector<float>(const std::string& name, const Shape& shape)>;

// Every tensor the architecture uses, by unprefixed name, with its shape.
std::vector<std::pair<std::string, Shape>> tensor_shapes(const Gpt2Config& c);

// The quantized module of a checkpoint by unprefixed base name ("wte",
// "h.0.attn.c_attn") with its out and in sizes, or nullopt when it is dense
// (then read from the HostSource).
using QuantizedSource =
    std::function<std::optional<models::Linear>(const std::string& base, int64_t out, int64_t in)>;

// Uploads every tensor from `source` to `device`; wte as binding-sized chunks,
// the projections as Conv1D Linears; modules `quantized` gives are taken as
// they are.
Gpt2Weights build_weights(const Gpt2Config& c, const HostSource& source, const Device& device,
                          const QuantizedSource& quantized = {});

// The block Linears LoRA adapts, by transformers module name
// ("transformer.h.0.attn.c_attn", ".attn.c_proj", ".mlp.c_fc", ".mlp.c_proj").
std::vector<std::pair<std::string, models::Linear*>> linears(Gpt2Weights& w);

// The attached adapters' A and B (of the Linears whose lora is defined) by
// PEFT key ("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight",
// then lora_B), module by module as `linears` orders them.
std::vector<std::pair<std::string, Tensor*>> lora_named(Gpt2Weights& w);

}  // namespace forge::gpt2
