// Helpers shared by the GPT-2 training files: the counter-based keys of
// models/common/keys.h (dropout, batch sampling).
#pragma once
#include <cstdint>
#include <string>

#include "forge/gpt2.h"
#include "forge/ops.h"
#include "models/common/keys.h"

namespace forge::gpt2 {

using models::derive_key;  // models/common/keys.h
using models::mix64;

}  // namespace forge::gpt2
