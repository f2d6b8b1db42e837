// The functions web/forge.js calls (through ccall with {async: true}, as a
// call may wait on the page's promises under Asyncify). Arguments and
// results are JSON text; a failure is {"error": "..."} with the forge::Error
// message, and the module stays usable. A model is a folder of the
// in-memory file system that forge.js filled from the network (config,
// tokenizer, template), its weights the page's Blobs (page_files.h).
#include <emscripten.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "forge/chat_template.h"
#include "forge/error.h"
#include "forge/generate.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/tokenizer.h"
#include "forge/train_fixed.h"
#include "gpu/runtime.h"
#include "hf_model_out.h"
#include "page_files.h"

using nlohmann::json;

namespace forge::web {

namespace {

struct Loaded {
  std::string dir;  // the folder's files but its weights (config, tokenizer, template), for exports
  std::unique_ptr<CausalLM> model;
  std::optional<Tokenizer> tokenizer;
  std::optional<ChatTemplate> chat;
  std::string chat_missing;  // why there is no chat template
  // The trainer of the last train() call (its AdamW state), which a resumed
  // call continues; declared after the model it refers to.
  std::unique_ptr<FixedBatchTrainer> trainer;
  int64_t trained_steps = 0;
};

std::map<int, Loaded> g_models;
int g_next_handle = 1;
std::string g_reply;        // the last call's result, valid until the next call
std::vector<float> g_logits;  // eval's logits, read by forge.js from the heap

// JS hooks forge.js installs: a generated token and a finished training step.
EM_JS(int, forge_js_on_token, (int handle, unsigned id, const char* text), {
  return Module.forgeOnToken ? (Module.forgeOnToken(handle, id, UTF8ToString(text)) === false ? 0 : 1) : 1;
});
// Returns 0 when the page asks to pause.
EM_JS(int, forge_js_on_step, (int handle, int step, double loss, double grad_norm), {
  return Module.forgeOnStep ? (Module.forgeOnStep(handle, step, loss, grad_norm) === false ? 0 : 1) : 1;
});

template <class F>
const char* guarded(F&& f) {
  json out;
  try {
    out = f();
  } catch (const std::exception& e) {
    out = json{{"error", e.what()}};
  }
  g_reply = out.dump();
  return g_reply.c_str();
}

Loaded& loaded(int handle) {
  auto it = g_models.find(handle);
  if (it == g_models.end()) throw ValueError("[web] no model with handle " + std::to_string(handle));
  return it->second;
}

// ids [B, T] from {"ids": [...] or [[...], ...]}.
Tensor ids_tensor(const json& ids, const CausalLM& model, const char* who) {
  std::vector<uint32_t> flat;
  int64_t rows = 1;
  auto take = [&](const json& row) {
    for (const json& v : row) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= model.vocab_size())
        throw ValueError(std::string("[") + who + "] token id " + v.dump() + " is out of range for vocab size " +
                         std::to_string(model.vocab_size()));
      flat.push_back(v.get<uint32_t>());
    }
  };
  if (!ids.is_array() || ids.empty()) throw ValueError(std::string("[") + who + "] inputIds must be a non-empty array");
  if (ids[0].is_array()) {
    rows = int64_t(ids.size());
    for (const json& row : ids) {
      if (!row.is_array() || row.size() != ids[0].size())
        throw ShapeError(std::string("[") + who + "] inputIds rows must have equal lengths");
      take(row);
    }
  } else {
    take(ids);
  }
  return Tensor::from_vector(flat, {rows, int64_t(flat.size()) / rows});
}

json model_info(const Loaded& s) {
  const ModelInfo& i = s.model->info();
  json out{{"family", i.family},           {"architecture", i.architecture}, {"vocabSize", i.vocab_size},
           {"contextLength", i.context_length}, {"layers", i.layers},        {"parameters", i.parameters},
           {"weights", i.weights},         {"device", s.model->device().name()},
           {"tokenizer", s.tokenizer.has_value()}, {"chatTemplate", s.chat.has_value()},
           {"loraTargets", s.model->info().family == "gpt2" ? json::array() : json(lora_target_names(*s.model))}};
  return out;
}

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

}  // namespace forge::web

using namespace forge;
using namespace forge::web;

extern "C" {

// {"dir": "/models/x", "device": "cpu"|"webgpu"} -> {"handle", "info"}.
EMSCRIPTEN_KEEPALIVE const char* forge_open(const char* args) {
  return guarded([&] {
    const json a = json::parse(args);
    const std::filesystem::path dir = a.at("dir").get<std::string>();
    const Device dev = Device::from_name(a.value("device", "cpu"));
    Loaded s;
    s.dir = dir.string();
    if (std::filesystem::exists(dir / "tokenizer.json")) s.tokenizer = Tokenizer::from_dir(dir);
    s.model = load_model(dir, dev, page_safetensors_files());  // tensor by tensor from the page's Blobs
    try {
      s.chat = ChatTemplate::from_model_dir(dir.string());
    } catch (const Error& e) {  // no template, or one that does not parse: the model still generates
      s.chat_missing = e.what();
    }
    const int h = g_next_handle++;
    json info = model_info(s);
    g_models.emplace(h, std::move(s));
    return json{{"handle", h}, {"info", info}};
  });
}

EMSCRIPTEN_KEEPALIVE const char* forge_close(int handle) {
  return guarded([&] {
    g_models.erase(handle);
    return json::object();
  });
}

// WebGPU's adapter, or {"available": false, "error": why}.
EMSCRIPTEN_KEEPALIVE const char* forge_adapter() {
  return guarded([&] {
    const Device dev = Device::webgpu();
    const gpu::AdapterInfo& a = dev.runtime().adapter();
    const gpu::Limits& l = dev.runtime().limits();
    return json{{"available", true},
                {"name", a.name},
                {"vendor", a.vendor},
                {"type", a.adapter_type},
                {"shaderF16", a.shader_f16},
                {"maxStorageBinding", l.max_storage_binding},
                {"maxBuffer", l.max_buffer}};
  });
}

// {"promptIds" | "prompt", "maxTokens", "greedy", "temperature", "topK",
// "topP", "seed"} -> {"ids", "text", "tokensPerSecond"}. Each token goes to
// Module.forgeOnToken(handle, id, textPiece) as it is read back.
EMSCRIPTEN_KEEPALIVE const char* forge_generate(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    const json a = json::parse(args);
    std::vector<uint32_t> prompt;
    if (a.contains("promptIds")) {
      const Tensor t = ids_tensor(a["promptIds"], *s.model, "generate");
      prompt = t.to_vector<uint32_t>();
    } else {
      if (!s.tokenizer) throw IoError("[generate] a text prompt needs the model's tokenizer.json; give promptIds");
      const std::string text = a.value("prompt", "");
      if (text.empty()) throw ValueError("[generate] the prompt text is empty");
      prompt = s.tokenizer->encode(text);
    }
    GenerateOptions o;
    o.max_new_tokens = a.value("maxTokens", int64_t(32));
    const bool greedy = a.value("greedy", !a.contains("temperature"));
    if (!greedy) {
      o.sample.temperature = a.value("temperature", 1.0f);
      o.sample.top_k = a.value("topK", int64_t(0));
      o.sample.top_p = a.value("topP", 1.0f);
      o.sample.seed = a.value("seed", uint64_t(0));
    }
    o.stop_ids = s.model->info().eos;
    if (o.stop_ids.empty() && s.tokenizer && s.tokenizer->eos_id()) o.stop_ids = {*s.tokenizer->eos_id()};
    const int64_t room = s.model->context_length() - int64_t(prompt.size());
    if (room < 1) throw ValueError("[generate] the prompt fills the context length");
    o.max_new_tokens = std::min(o.max_new_tokens, room);

    std::optional<StreamDecoder> stream;
    if (s.tokenizer) stream.emplace(*s.tokenizer, true);
    std::string text;
    double last_yield = now_s();
    GenerateStats stats;
    const std::vector<uint32_t> ids = generate(*s.model, prompt, o, [&](uint32_t id) {
      const std::string piece = stream ? stream->push(id) : std::string();
      text += piece;
      const bool go_on = forge_js_on_token(handle, id, piece.c_str());
      // Let the page paint the streamed text now and then.
      if (now_s() - last_yield > 0.05) {
        emscripten_sleep(0);
        last_yield = now_s();
      }
      return go_on;
    }, &stats);
    if (stream) text += stream->flush();
    const double tps = stats.decode_s > 0 ? double(stats.decode_tokens) / stats.decode_s : 0.0;
    return json{{"ids", ids}, {"text", text}, {"tokensPerSecond", tps}, {"promptTokens", prompt.size()}};
  });
}

// {"inputIds": [B][T] or [T]} -> {"loss", "shape"}; the logits stay in
// g_logits for forge_logits_ptr.
EMSCRIPTEN_KEEPALIVE const char* forge_eval(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    const Tensor ids = ids_tensor(json::parse(args).at("inputIds"), *s.model, "eval");
    const Tensor logits = s.model->forward(ids);
    const float loss = ids.shape()[1] >= 2 ? causal_lm_loss(logits, ids) : NAN;
    g_logits = logits.to_vector<float>();
    return json{{"loss", std::isnan(loss) ? json(nullptr) : json(loss)}, {"shape", logits.shape()}};
  });
}

EMSCRIPTEN_KEEPALIVE float* forge_logits_ptr() { return g_logits.data(); }
EMSCRIPTEN_KEEPALIVE size_t forge_logits_len() { return g_logits.size(); }

// {"inputIds": [B][T], "steps", "lr", "weightDecay", "lora": {"rank",
// "alpha", "targets", "rslora", "seed"}, "resume"} -> {"losses", "gradNorms",
// "stepSeconds", "paused", "stepsDone"}, as `forge train --fixed-batch`
// (with --lora-rank: a fresh adapter, PEFT's initialisation from `seed`, the
// CLI's default 1234). Module.forgeOnStep returning false pauses after that
// step; "resume": true continues the same trainer (its AdamW moments and step
// count), so a paused run ends where an uninterrupted one does.
EMSCRIPTEN_KEEPALIVE const char* forge_train(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    const json a = json::parse(args);
    const Tensor ids = ids_tensor(a.at("inputIds"), *s.model, "train");
    const int64_t steps = a.value("steps", int64_t(10));
    if (steps < 1) throw ValueError("[train] steps must be >= 1, got " + std::to_string(steps));
    const bool resume = a.value("resume", false);
    if (resume && !s.trainer) throw ValueError("[train] nothing to resume: this model has not trained yet");
    if (!resume) {
      s.trainer.reset();
      s.trained_steps = 0;
      if (a.contains("lora") && !a["lora"].is_null()) {
        if (attached_adapter(*s.model)) throw ValueError("[train] the model already has a LoRA adapter; load it again");
        const json& l = a["lora"];
        LoraConfig c;
        c.rank = l.value("rank", int64_t(8));
        c.alpha = l.value("alpha", 2.0 * double(c.rank));
        if (l.contains("targets")) c.targets = l["targets"].get<std::vector<std::string>>();
        c.rslora = l.value("rslora", false);
        attach_new_adapter(*s.model, c, l.value("seed", uint64_t(1234)));
      }
      s.trainer = std::make_unique<FixedBatchTrainer>(
          *s.model, fixed_batch_config(a.value("lr", 1e-3), a.value("weightDecay", 0.01), steps));
    }
    json losses = json::array(), norms = json::array();
    bool paused = false;
    const double start = now_s();
    int64_t done = 0;
    while (done < steps && !paused) {
      const TrainStepResult r = s.trainer->step(ids);
      losses.push_back(r.loss);
      norms.push_back(r.grad_norm);
      ++done;
      paused = !forge_js_on_step(handle, int(s.trained_steps++), r.loss, r.grad_norm) && done < steps;
      emscripten_sleep(0);  // the page's loss chart and its Pause button
    }
    return json{{"losses", losses}, {"gradNorms", norms}, {"stepSeconds", (now_s() - start) / double(done)},
                {"paused", paused}, {"stepsDone", s.trained_steps}};
  });
}

// {"kind": "adapter" | "model", "dir"} -> {"files": [names]}: the attached
// LoRA adapter in PEFT's layout (adapter_config.json,
// adapter_model.safetensors), or the Llama-family model in Hugging Face's
// (config.json, model.safetensors f32, the tokenizer files), written to
// `dir` of the in-memory file system for forge.js to hand to the page.
EMSCRIPTEN_KEEPALIVE const char* forge_export(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    const json a = json::parse(args);
    const std::string kind = a.value("kind", "adapter");
    const std::filesystem::path dir = a.at("dir").get<std::string>();
    const bool lora = attached_adapter(*s.model).has_value();
    if (kind == "adapter") {
      if (!lora) throw ValueError("[export] the model has no LoRA adapter: train with LoRA first, or export the model");
      save_adapter(*s.model, dir, s.model->info().architecture);
    } else if (kind == "model") {
      if (lora) throw ValueError("[export] the model trains a LoRA adapter: export the adapter (forge merge folds it in)");
      if (s.model->info().family == "gpt2")
        throw ValueError("[export] the page writes Llama-family models; GPT-2 trains natively into a checkpoint");
      cli::write_hf_model(dir, s.dir, s.trainer ? s.trainer->llama()->host_weights() : model_weights(*s.model));
    } else {
      throw ValueError("[export] kind must be \"adapter\" or \"model\", got \"" + kind + "\"");
    }
    json files = json::array();
    for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().filename().string());
    return json{{"files", files}};
  });
}

// {"messages": [{"role", "content"}...], "addGenerationPrompt", "extra": {...
// variables: tools, date_string, enable_thinking}} -> {"text",
// "ids"}: the conversation through the model's chat template, and its ids as
// `forge chat` encodes them (no special tokens added: the template has them).
EMSCRIPTEN_KEEPALIVE const char* forge_chat_prompt(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    if (!s.chat) throw IoError("[chat] " + s.chat_missing);
    const nlohmann::ordered_json a = nlohmann::ordered_json::parse(args);
    const std::string text = s.chat->render(a.at("messages"), a.value("addGenerationPrompt", true),
                                            a.value("extra", nlohmann::ordered_json::object()));
    json out{{"text", text}};
    if (s.tokenizer) out["ids"] = s.tokenizer->encode(text, /*add_special_tokens=*/false);
    return out;
  });
}

EMSCRIPTEN_KEEPALIVE const char* forge_encode(int handle, const char* text) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    if (!s.tokenizer) throw IoError("[encode] the model has no tokenizer.json");
    return json{{"ids", s.tokenizer->encode(text)}};
  });
}

EMSCRIPTEN_KEEPALIVE const char* forge_decode(int handle, const char* args) {
  return guarded([&] {
    Loaded& s = loaded(handle);
    if (!s.tokenizer) throw IoError("[decode] the model has no tokenizer.json");
    const std::vector<uint32_t> ids = json::parse(args).get<std::vector<uint32_t>>();
    return json{{"text", s.tokenizer->decode(ids)}};
  });
}

}  // extern "C"
