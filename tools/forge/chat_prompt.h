// Turning a conversation into prompt ids for a model folder, as `forge chat`
// and `forge generate --chat` do: the folder's chat template, the rendered
// text encoded as transformers' apply_chat_template(tokenize=True) encodes it,
// and the ids that end an assistant turn.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/chat_template.h"
#include "forge/model.h"
#include "forge/tokenizer.h"

namespace forge::cli {

// The chat template of `dir`; an IoError "[who] MODEL has no chat template
// (...); " and what to do instead (who: "chat", "generate" or "train") when
// it has none (GPT-2).
ChatTemplate load_chat_template(const std::filesystem::path& dir, const std::string& model_name,
                                const std::string& who);

// Ids of the rendered text. Templates write the BOS text themselves, so, as
// transformers does, the post-processor's special tokens are not added.
std::vector<uint32_t> encode_rendered(const Tokenizer& tok, const std::string& rendered);

// Where a reply ends: the model's EOS ids, the tokenizer's EOS, the special
// token the template closes an assistant turn with, and the usual end-of-turn
// tokens (<|im_end|>, <|eot_id|>, <|end|>, </s>, <end_of_turn>) that are
// special tokens of the vocabulary.
std::vector<uint32_t> chat_stop_ids(const CausalLM& model, const Tokenizer& tok, const ChatTemplate& tmpl);

// A conversation as training ids (forge train's chat JSONL): the rendered
// text cut where each assistant reply starts (the render of the messages
// before it with the generation prompt) and ends (the render up to it), each
// piece encoded as encode_rendered does; every token outside the replies
// carries kNoLoss (train_data.h). ValueError when the template does not
// render a conversation as the prefixes of its continuations.
std::vector<uint32_t> encode_chat_for_training(const Tokenizer& tok, const ChatTemplate& tmpl,
                                               const nlohmann::ordered_json& messages);

// A JSON list of {"role", "content"} objects from FILE; ValueError naming the
// file and the problem otherwise.
nlohmann::ordered_json read_messages(const std::string& path, const std::string& who);

}  // namespace forge::cli
