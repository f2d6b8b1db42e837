// tokenizer.json's pipeline components (normalizer, pre_tokenizer,
// post_processor, decoder) -> their text/ types. Anything malformed, and any
// component `type` not listed in the headers, is an IoError naming the file
// (`source`) and the type.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text/decoder.h"
#include "text/normalizer.h"
#include "text/post_processor.h"
#include "text/pretokenizer.h"

namespace forge::text {

Normalizer parse_normalizer(const nlohmann::json& j, const std::string& source);
std::vector<PreTokenizeStep> parse_pre_tokenizer(const nlohmann::json& j,
                                                 const std::string& source);
Decoder parse_decoder(const nlohmann::json& j, const std::string& source);
// `id_of` resolves a special token's name when a template gives no ids.
std::vector<Template> parse_post_processor(
    const nlohmann::json& j, const std::string& source,
    const std::function<std::uint32_t(const std::string&)>& id_of);

}  // namespace forge::text
