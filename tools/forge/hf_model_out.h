// Writing a model folder in the Hugging Face layout from host weights: what
// `forge train --fixed-batch --out` and `forge merge` produce, and what
// load_model, `forge generate` and `forge eval` read.
#pragma once
#include <filesystem>
#include <vector>

#include "forge/train.h"

namespace forge::cli {

// DIR/config.json (the source folder's, with dtype float32 or bfloat16 and
// without a quantization entry), DIR/model.safetensors (the weights' names,
// stored f32 or rounded to bf16 by `dtype`) and the source's tokenizer and
// generation files, copied when present.
void write_hf_model(const std::filesystem::path& dir, const std::filesystem::path& source_dir,
                    const std::vector<HostTensor>& weights, DType dtype = DType::F32);

}  // namespace forge::cli
