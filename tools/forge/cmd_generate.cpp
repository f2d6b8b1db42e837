// forge generate -m DIR (-p TEXT | --prompt-file F | --prompt-ids 1,2,3 | --messages M.json)
//   [--chat] [-n N] [--greedy | --temperature T --top-k K --top-p P] [--seed S]
//   [--min-p P] [--repeat-penalty R [--repeat-last-n N]] [--context-shift [--keep N]]
//   [--stop STR]... [--ignore-eos] [--show-special] [--device D] [--json] [--no-cache]
// Streams the text to stdout as it is produced; with --json nothing is
// streamed and stdout holds one JSON object: prompt_ids, ids (the new ids),
// text, stop reason, seed, tokens/s, device. A model folder without a
// tokenizer needs --prompt-ids; the ids are then streamed space-separated and
// the JSON has no "text" key. Stops at the model's EOS ids, a stop string, or
// after N tokens; a prompt + N beyond the context length stops at the context
// with a notice, or with --context-shift drops the oldest ids (after the
// first --keep prompt ids) and goes on. --chat renders the prompt with the
// model's chat template (--messages: a JSON list of {role, content}; -p /
// --prompt-file: one user message) with the generation prompt, and stops at
// the end of the reply.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "chat_prompt.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "profile.h"
#include "gen_options.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "forge/tokenizer.h"
#include "model_arg.h"
#include "text/tokenizer_spec.h"

namespace forge::cli {
namespace {

struct GenerateArgs {
  std::string model, prompt, prompt_file, messages, device = "auto";
  std::optional<std::string> prompt_ids;  // given, even as "", means ids
  std::string adapter;  // --adapter: a LoRA adapter folder
  std::string dtype = "f32";  // --dtype: dense weights on the device
  bool json = false, no_cache = false, chat = false, context_shift = false;
  int64_t keep = 0;
  SamplingArgs sampling;
};

bool has_tokenizer(const std::filesystem::path& dir) {
  return std::filesystem::exists(dir / "tokenizer.json") || std::filesystem::exists(dir / "vocab.json") ||
         std::filesystem::exists(dir / "encoder.json");
}

std::string read_prompt_file(const std::string& path) {
  if (path != "-") return text::read_text_file(path, "generate");
  std::ostringstream text;
  text << std::cin.rdbuf();
  return text.str();
}

void run(const GenerateArgs& a) {
  GenerateOptions o = sampling_options(a.sampling);
  o.use_cache = !a.no_cache;
  o.context_shift = a.context_shift;
  o.keep = a.keep;
  if (a.context_shift && a.no_cache) throw UsageError("--context-shift needs the KV cache (leave out --no-cache)");
  if (a.chat && a.prompt_ids) throw UsageError("--chat takes --messages, -p or --prompt-file, not --prompt-ids");
  if (!a.messages.empty() && !a.chat) throw UsageError("--messages needs --chat");
  const Device dev = resolve_devices(a.device)[0];
  const std::filesystem::path dir = model_folder(a.model);
  std::optional<Tokenizer> tok;
  if (has_tokenizer(dir)) tok = Tokenizer::from_dir(dir);
  std::vector<uint32_t> prompt;
  std::optional<ChatTemplate> tmpl;
  if (a.prompt_ids) {
    prompt = parse_id_list(*a.prompt_ids, "--prompt-ids");
  } else {
    if (!tok)
      throw IoError("[generate] a text prompt needs a tokenizer in " + a.model +
                    " (tokenizer.json or vocab.json + merges.txt); use --prompt-ids");
    if (a.chat) {
      tmpl = load_chat_template(dir, a.model, "generate");
      nlohmann::ordered_json messages;
      if (!a.messages.empty()) messages = read_messages(a.messages, "generate");
      else messages = nlohmann::ordered_json::array(
               {{{"role", "user"}, {"content", a.prompt_file.empty() ? a.prompt : read_prompt_file(a.prompt_file)}}});
      prompt = encode_rendered(*tok, tmpl->render(messages, /*add_generation_prompt=*/true));
    } else {
      const std::string text = a.prompt_file.empty() ? a.prompt : read_prompt_file(a.prompt_file);
      // Encoding "" can still give ids (a BOS), which would hide the mistake.
      if (text.empty())
        throw ValueError("[generate] the prompt text is empty (to start from BOS alone, give its id to --prompt-ids)");
      prompt = tok->encode(text);
    }
    if (prompt.empty()) throw ValueError("[generate] the prompt is empty");
  }
  if (!a.sampling.stop.empty() && !tok) throw ValueError("[generate] --stop needs a tokenizer in " + a.model);
  std::unique_ptr<CausalLM> model = load_model_and_adapter(dir, dev, a.adapter, weights_dtype(a.dtype));

  if (!a.sampling.ignore_eos) {
    if (tmpl) {
      o.stop_ids = chat_stop_ids(*model, *tok, *tmpl);
    } else {
      o.stop_ids = model->info().eos;
      if (o.stop_ids.empty() && tok && tok->eos_id()) o.stop_ids = {*tok->eos_id()};
    }
  }
  const int64_t room = model->context_length() - int64_t(prompt.size());
  if (room < 1)
    throw ValueError("[generate] the prompt of " + std::to_string(prompt.size()) +
                     " tokens fills the context length " + std::to_string(model->context_length()));
  bool context_full = false;
  if (o.max_new_tokens > room && !o.context_shift) {
    o.max_new_tokens = room;
    context_full = true;
  }

  ReplyPrinter out(tok ? &*tok : nullptr, a.sampling, !a.json);
  GenerateStats st;
  std::vector<uint32_t> ids = generate(*model, prompt, o, [&](uint32_t id) { return out.push(id); }, &st);
  out.finish();
  const std::string reason = stop_reason(out, ids, o.stop_ids, context_full);
  if (!a.json) std::fputs("\n", stdout);
  std::fflush(stdout);  // the text before the notices on stderr, also when both go to one pipe
  if (reason == "context")
    std::fprintf(stderr, "forge: stopped at the context length %lld\n", (long long)model->context_length());
  const double prefill = st.prefill_s > 0 ? double(st.prefill_tokens) / st.prefill_s : 0.0;
  const double decode = st.decode_s > 0 ? double(st.decode_tokens) / st.decode_s : 0.0;
  std::fprintf(stderr, "forge: %zu tokens; prefill %.1f tokens/s, decode %.1f tokens/s on %s\n", ids.size(), prefill,
               decode, dev.name().c_str());
  if (a.json) {
    nlohmann::json j{{"prompt_ids", prompt},
                     {"ids", ids},
                     {"stop_reason", reason},
                     {"seed", o.sample.seed},
                     {"prefill_tokens_per_s", prefill},
                     {"decode_tokens_per_s", decode},
                     {"device", dev.name()}};
    if (tok) j["text"] = out.text();
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fflush(stdout);
  print_profile(dev, "the generation");
}

const bool registered = register_command(
    {"generate", "Generate text with a model of any family, streamed to stdout", [](CLI::App& sub) {
       static GenerateArgs a;
       sub.add_option("-m,--model", a.model, "Model folder (config.json + safetensors [+ tokenizer]), or a Hugging Face id org/name[@revision]")->required();
       sub.add_option("--adapter", a.adapter, "A LoRA adapter folder (PEFT layout) to apply to the model");
       add_dtype_option(sub, a.dtype);
       auto* prompt = sub.add_option_group("prompt", "what to continue");
       may_be_empty(prompt->add_option("-p,--prompt", a.prompt, "Prompt text (needs a tokenizer in the model folder)"));
       prompt->add_option("--prompt-file", a.prompt_file, "Read the prompt text from a file (- for stdin)");
       prompt->add_option("--prompt-ids", a.prompt_ids, "Prompt token ids: 1,2,3 or \"1 2 3\"");
       prompt->add_option("--messages", a.messages, "With --chat: a JSON file holding a list of {role, content}");
       prompt->require_option(1);
       sub.add_flag("--chat", a.chat, "Render the prompt with the model's chat template and generate the reply");
       add_sampling_options(sub, a.sampling, "Tokens to generate");
       add_device_option(sub, a.device);
       add_profile_flag(sub);
       sub.add_flag("--json", a.json, "Print one JSON object (ids, text, tokens/s, device) and nothing else");
       sub.add_flag("--no-cache", a.no_cache, "Recompute the whole sequence for every token (no KV cache)");
       auto* shift = sub.add_flag("--context-shift", a.context_shift,
                                  "When the context fills, drop the oldest half of the ids (after --keep) and continue");
       check_at_least(sub.add_option("--keep", a.keep, "With --context-shift: prompt ids never dropped"), 0)
           ->needs(shift);
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
