// forge generate --model DIR (--prompt TEXT | --prompt-ids 1,2,3) [-n N]
//   [--greedy | --temperature T --top-k K --top-p P] [--seed S] [--device D] [--json] [--no-cache]
// Streams the text to stdout as it is produced. With --json the last line of
// stdout is one JSON object: prompt_ids, ids (the new ids), text, prefill and
// decode tokens/s, device. A model folder without a tokenizer needs
// --prompt-ids; the ids are then streamed space-separated instead of text and
// the JSON has no "text" key. Stops at the model's EOS id or after N tokens.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "command.h"
#include "devices.h"
#include "forge/gpt2.h"
#include "forge/tokenizer.h"

namespace forge::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_ids, device = "auto";
  int64_t n = 32;
  bool greedy = false, json = false, no_cache = false;
  std::optional<float> temperature, top_p;
  std::optional<int64_t> top_k;
  uint64_t seed = 0;
};

// "1,2,3" -> ids.
std::vector<uint32_t> parse_prompt_ids(const std::string& text) {
  std::vector<uint32_t> ids;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || item[0] == '-' || v > 0xFFFFFFFFull)
      throw ValueError("[generate] --prompt-ids item '" + item + "' is not a token id");
    ids.push_back(uint32_t(v));
  }
  return ids;
}

bool has_tokenizer(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "tokenizer.json") || std::filesystem::exists(dir / "vocab.json") ||
         std::filesystem::exists(dir / "encoder.json");
}

void run(const GenerateArgs& a) {
  if (a.greedy && (a.temperature || a.top_k || a.top_p))
    throw ValueError("[generate] --greedy excludes --temperature, --top-k and --top-p");
  const Device dev = resolve_devices(a.device)[0];
  const ModelConfig mc = load_config(a.model);
  std::optional<Tokenizer> tok;
  if (has_tokenizer(a.model)) tok = Tokenizer::from_dir(a.model);
  std::vector<uint32_t> prompt;
  if (!a.prompt_ids.empty()) {
    prompt = parse_prompt_ids(a.prompt_ids);
  } else {
    if (!tok)
      throw IoError("[generate] --prompt needs a tokenizer in " + a.model +
                    " (tokenizer.json or vocab.json + merges.txt); use --prompt-ids");
    prompt = tok->encode(a.prompt);
  }
  Gpt2 model = Gpt2::load(a.model, dev);

  Gpt2GenerateOptions o;
  o.max_new_tokens = a.n;
  o.use_cache = !a.no_cache;
  if (!a.greedy && (a.temperature || a.top_k || a.top_p)) {
    o.sample.temperature = a.temperature.value_or(1.0f);
    o.sample.top_k = a.top_k.value_or(0);
    o.sample.top_p = a.top_p.value_or(1.0f);
  }
  o.sample.seed = a.seed;
  if (!mc.eos_token_ids.empty()) o.eos = uint32_t(mc.eos_token_ids[0]);
  else if (tok && tok->eos_id()) o.eos = *tok->eos_id();

  std::optional<StreamDecoder> stream;
  if (tok) stream.emplace(*tok);
  std::string text;
  auto on_token = [&](uint32_t id) {
    std::string piece = stream ? stream->push(id) : std::to_string(id) + " ";
    text += piece;
    std::fputs(piece.c_str(), stdout);
    std::fflush(stdout);
  };
  Gpt2GenerateStats st;
  std::vector<uint32_t> ids = gpt2_generate(model, prompt, o, on_token, &st);
  if (stream) {
    std::string rest = stream->flush();
    text += rest;
    std::fputs(rest.c_str(), stdout);
  }
  std::fputs("\n", stdout);
  if (a.json) {
    nlohmann::json j{{"prompt_ids", prompt},
                     {"ids", ids},
                     {"prefill_tokens_per_s", st.prefill_s > 0 ? double(st.prefill_tokens) / st.prefill_s : 0.0},
                     {"decode_tokens_per_s", st.decode_s > 0 ? double(st.decode_tokens) / st.decode_s : 0.0},
                     {"device", dev.name()}};
    if (tok) j["text"] = text;
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
}

const bool registered = register_command(
    {"generate", "Generate text with a GPT-2 model, streamed to stdout", [](CLI::App& sub) {
       static GenerateArgs a;
       sub.add_option("--model", a.model, "Model folder (config.json + safetensors [+ tokenizer])")->required();
       auto* prompt = sub.add_option_group("prompt", "what to continue");
       prompt->add_option("--prompt", a.prompt, "Prompt text (needs a tokenizer in the model folder)");
       prompt->add_option("--prompt-ids", a.prompt_ids, "Prompt token ids: 1,2,3");
       prompt->require_option(1);
       sub.add_option("-n,--max-new-tokens", a.n, "Tokens to generate")->capture_default_str()->check(CLI::NonNegativeNumber);
       sub.add_flag("--greedy", a.greedy, "Pick the most likely token (the default without sampling flags)");
       sub.add_option("--temperature", a.temperature, "Sampling temperature (0: greedy)");
       sub.add_option("--top-k", a.top_k, "Keep the K most likely tokens (0: all)");
       sub.add_option("--top-p", a.top_p, "Keep the most likely tokens up to probability mass P");
       sub.add_option("--seed", a.seed, "Seed of the sampling draws")->capture_default_str();
       add_device_option(sub, a.device);
       sub.add_flag("--json", a.json, "End with one JSON line: ids, text, tokens/s, device");
       sub.add_flag("--no-cache", a.no_cache, "Recompute the whole sequence for every token (no KV cache)");
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
