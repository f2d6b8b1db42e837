// forge train: trains a model on text files: a GPT-2 from a model folder
// (--model DIR) or a new random model (--preset NAME, shaped further by
// --n-layer, --n-embd, --n-head, --context), or a Llama-family folder (Llama,
// Qwen2, Mistral); a model folder of either trains fully or with LoRA
// (--lora-rank R or --adapter DIR: only the adapter trains, the base frozen
// and possibly quantized, and the checkpoints hold it in PEFT's layout).
//
//   forge train --data a.txt notes/ --preset tiny --tokenizer bytes --out run/ --steps 200
//   forge train --data notes.txt --model smollm2/ --lora-rank 8 --out run/
//   forge train --out run/ --resume            (after Ctrl-C: continues with the run's settings)
//   forge train --model DIR --fixed-batch IN.safetensors --steps 10 --json   (any family; train_fixed.cpp)
//
// --data takes text files, and JSONL files of {"text": ...} or {"messages":
// [...]} lines (conversations rendered with the model's chat template, the
// loss on the assistant's tokens only; train_data.h). The text is tokenized
// once into OUT/tokens.bin; the last --val-fraction of
// it is held out for validation. Each step draws --batch random windows of
// --seq + 1 tokens (in micro-batches of --micro-batch sequences, gradients
// accumulated), every position predicting the next token. OUT/log.jsonl gets
// one line per step and per evaluation (validation loss and a sample of
// generated text); OUT/checkpoint/ holds the latest checkpoint (HF weights,
// optimizer state, tokenizer, and train.json with the run's settings; see
// train_checkpoint.h). SIGINT / SIGTERM finish the step, save a checkpoint and
// exit with 130 / 143. --resume continues from the checkpoint with its
// settings: the batches and dropout masks are pure functions of (seed, step),
// so on the CPU the losses equal those of an uninterrupted run exactly.
//
// Nothing is written before the run has started: a bad flag, file or model
// leaves no folder behind.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "byte_tokenizer.h"
#include "chat_prompt.h"
#include "cli_util.h"
#include "command.h"
#include "devices.h"
#include "forge/lora.h"
#include "profile.h"
#include "interrupt.h"
#include "io/model_folder.h"
#include "train_checkpoint.h"
#include "train_data.h"
#include "train_lora.h"
#include "train_model.h"
#include "train_run_dir.h"
#include "model_arg.h"
#include "train_settings.h"

namespace forge::cli {
namespace {

namespace fs = std::filesystem;

enum Stream : uint64_t { kTrainWindows = 0x747261696e, kValWindows = 0x76616c };

std::string fmt_time(double s) {
  char b[32];
  const long t = long(s + 0.5);
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  return b;
}

void say(const std::string& line) { std::fprintf(stderr, "train: %s\n", line.c_str()); }

std::string read_file_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw IoError("[train] cannot read '" + p.string() + "'");
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The run's tokenizer and the tokenizer.json text its checkpoints carry.
struct RunTokenizer {
  TrainTokenizer tok;
  std::string json;  // empty: a folder without tokenizer.json (vocab.json + merges.txt); not saved
};

RunTokenizer load_tokenizer(const TrainArgs& a, const std::optional<FoundCheckpoint>& found) {
  if (a.tokenizer == "bytes") return {TrainTokenizer{}, byte_tokenizer_json()};
  fs::path src = a.tokenizer;
  if (found && fs::exists(found->dir / "tokenizer.json")) src = found->dir / "tokenizer.json";
  if (src.empty() && !a.model.empty() && fs::exists(fs::path(a.model) / "tokenizer.json"))
    src = fs::path(a.model) / "tokenizer.json";
  if (src.empty())
    throw UsageError("no tokenizer: pass --tokenizer FILE|DIR, or --tokenizer bytes for byte-level ids");
  RunTokenizer r;
  r.tok.bpe = Tokenizer::from_path(src);
  const fs::path file = fs::is_directory(src) ? src / "tokenizer.json" : src;
  if (fs::exists(file)) r.json = read_file_text(file);
  else say("note: " + src.string() + " has no tokenizer.json; the checkpoints will hold no tokenizer");
  return r;
}

bool shape_given(const TrainArgs& a) {
  for (const char* f : {"--n-layer", "--n-embd", "--n-head", "--context"})
    if (a.given.count(f)) return true;
  return false;
}

// A new model's shape: the preset (GPT-2 124M's by default) with the shape flags applied.
Gpt2Config new_model_config(const TrainArgs& a, int64_t vocab) {
  Gpt2Config c = gpt2_preset(a.preset.empty() ? "124M" : a.preset);
  if (a.n_layer) c.n_layer = a.n_layer;
  if (a.n_head) c.n_head = a.n_head;
  if (a.n_embd) c.n_embd = a.n_embd, c.n_inner = 4 * a.n_embd;
  if (a.context) c.n_positions = a.context;
  c.vocab_size = vocab;
  if (c.n_embd % c.n_head != 0)
    throw UsageError("--n-embd " + std::to_string(c.n_embd) + " must be a multiple of --n-head " +
                     std::to_string(c.n_head));
  return c;
}

// On --resume, the shape flags may only repeat the checkpoint's.
void check_shape_flags(const TrainArgs& a, const Gpt2Config& c) {
  const std::pair<const char*, std::pair<int64_t, int64_t>> flags[] = {
      {"--n-layer", {a.n_layer, c.n_layer}},
      {"--n-embd", {a.n_embd, c.n_embd}},
      {"--n-head", {a.n_head, c.n_head}},
      {"--context", {a.context, c.n_positions}}};
  for (const auto& [flag, v] : flags)
    if (a.given.count(flag) && v.first != v.second)
      throw UsageError(std::string(flag) + " " + std::to_string(v.first) + " contradicts the checkpoint's model (" +
                       flag + " " + std::to_string(v.second) + ")");
}

void check_start_flags(const TrainArgs& a) {
  if (a.data.empty()) throw UsageError("--data FILE|DIR... is required (or --fixed-batch)");
  const bool new_model = !a.preset.empty() || shape_given(a);
  if (a.model.empty() && !new_model)
    throw UsageError("pass --model DIR to train a model further, or --preset NAME (124M, 355M, 774M, 1.5B, tiny) "
                     "for a new one");
  if (!a.model.empty() && new_model)
    throw UsageError("--model starts from that model's shape; --preset, --n-layer, --n-embd, --n-head and --context "
                     "shape a new model: pass one or the other");
  if (a.model.empty() && wants_lora(a))
    throw UsageError("LoRA (--adapter, --lora-rank) trains an adapter over the frozen model of --model DIR; a new "
                     "model (--preset) trains every weight");
}

std::string model_text(const Gpt2Config& c) {
  return "gpt2 " + std::to_string(c.n_layer) + " layers x " + std::to_string(c.n_embd) + " (" +
         std::to_string(c.n_head) + " heads), context " + std::to_string(c.n_positions) + ", vocab " +
         std::to_string(c.vocab_size);
}

// GPT-2: a model folder, a checkpoint of the run, or a new random model;
// with the LoRA flags the folder of --model, frozen, under an adapter.
Gpt2 load_gpt2(const TrainArgs& a, const std::optional<FoundCheckpoint>& found, const Device& dev, int64_t vocab) {
  const fs::path dir = run_weights_dir(a, found);
  Gpt2 m = dir.empty() ? Gpt2::random(new_model_config(a, vocab), a.seed, dev)
                        : Gpt2::load(dir, dev, train_weights_dtype(a));
  attach_run_adapter(a, found, m);
  return m;
}

class Gpt2TrainModel : public TrainModel {
 public:
  Gpt2TrainModel(const TrainArgs& a, const std::optional<FoundCheckpoint>& found, const Device& dev, int64_t vocab)
      : base_(a.model), lora_(wants_lora(a)), model_(load_gpt2(a, found, dev, vocab)),
        trainer_(model_, make_train_config(a, false)) {
    if (found) check_shape_flags(a, model_.config());
    if (found) read_gpt2_train_state(found->dir, trainer_);
  }
  std::string describe() const override { return model_text(model_.config()) + adapter_text(model_); }
  int64_t context() const override { return model_.config().n_positions; }
  int64_t vocab() const override { return model_.config().vocab_size; }
  int64_t steps_done() const override { return trainer_.steps_done(); }
  Gpt2StepResult step(const std::vector<Gpt2MicroBatch>& micro) override { return trainer_.step(micro); }
  float eval_loss(const Gpt2MicroBatch& mb) override { return gpt2_eval_loss(model_, mb.ids, mb.targets); }
  std::vector<uint32_t> sample(const std::vector<uint32_t>& prompt, int64_t max_new, uint64_t seed) override {
    Gpt2GenerateOptions go;
    go.max_new_tokens = std::min<int64_t>(max_new, context() - 1);
    go.sample.temperature = 1.0f;
    go.sample.top_k = 40;
    go.sample.seed = seed;
    return gpt2_generate(model_, prompt, go);
  }
  void save(const fs::path& dir, const CheckpointExtras& extras) override {
    if (!lora_) return save_train_checkpoint(dir, model_, trainer_, extras);
    save_train_checkpoint(dir, trainer_.steps_done(), extras, [&](const fs::path& tmp) {
      save_adapter(model_, tmp, base_);
      write_gpt2_train_state(tmp, trainer_);
    });
  }

 private:
  std::string base_;  // --model: a LoRA run's base
  bool lora_;
  Gpt2 model_;
  Gpt2Trainer trainer_;
};

std::unique_ptr<TrainModel> gpt2_train_model(const TrainArgs& a, const std::optional<FoundCheckpoint>& found,
                                             const Device& dev, int64_t vocab) {
  return std::make_unique<Gpt2TrainModel>(a, found, dev, vocab);
}

void run(TrainArgs a) {
  if (!a.fixed_batch.empty()) return run_fixed_batch(a);
  if (a.out.empty()) throw UsageError("--out DIR is required (the run folder)");
  if (a.resume && a.overwrite) throw UsageError("--resume and --overwrite exclude each other");
  StopSignals signals;
  const fs::path out = a.out, ckpt = out / "checkpoint";
  io::check_folder_destination(out);

  std::optional<FoundCheckpoint> found;
  if (a.resume) {
    found = recover_train_checkpoint(ckpt);
    if (!found && fs::exists(ckpt / "optimizer.safetensors") && !fs::exists(ckpt / "train.json"))
      throw IoError("[train] --resume: '" + ckpt.string() + "' has no train.json (an older forge wrote it); train "
                    "it further with --model " + ckpt.string() + " and a new --out");
    if (!found)
      throw IoError("[train] --resume: no checkpoint in '" + ckpt.string() + "' to resume from" +
                    (holds_train_run(out) ? " (the run stopped before its first one: start it again with --overwrite)"
                                          : ""));
    if (!found->recovered_from.empty())
      say("recovered the checkpoint of step " + std::to_string(found->step) + " from " + found->recovered_from +
          " (a save had been cut short)");
    for (const std::string& note : apply_saved_settings(a, found->settings, found->step)) say(note);
  } else {
    if (holds_train_run(out) && !a.overwrite)
      throw UsageError("--out '" + a.out + "' holds a run already: continue it with --resume, or pass --overwrite "
                       "to start again");
    check_start_flags(a);
  }
  const int64_t micro = a.micro ? a.micro : a.batch;
  if (a.batch % micro != 0)
    throw UsageError("--batch " + std::to_string(a.batch) + " must be a multiple of --micro-batch " +
                     std::to_string(micro));

  if (!found && !a.model.empty()) check_model_dir(a.model);
  train_weights_dtype(a);  // a bf16 base without LoRA is refused before anything loads
  const Device dev = resolve_devices(a.device)[0];
  const RunTokenizer rt = load_tokenizer(a, found);
  const int64_t vocab = rt.tok.bpe ? int64_t(rt.tok.bpe->vocab_size()) : kByteVocabSize;
  const bool gpt2 = a.model.empty() || load_config(check_model_dir(a.model)).arch == Arch::Gpt2;
  std::unique_ptr<TrainModel> tm = gpt2 ? gpt2_train_model(a, found, dev, vocab) : llama_train_model(a, found, dev);
  if (a.seq == 0) a.seq = std::min<int64_t>(128, tm->context());
  if (a.seq > tm->context())
    throw UsageError("--seq " + std::to_string(a.seq) + " is longer than the model's context of " +
                     std::to_string(tm->context()) + " positions" +
                     (a.model.empty() && !found ? " (--context sets a new model's)" : ""));
  const int64_t T = a.seq;

  const fs::path tokens_path = out / "tokens.bin";
  const bool reuse_tokens = found && fs::exists(tokens_path);
  // Conversations (chat JSONL) through the model's chat template, loaded
  // when the first one is met.
  std::optional<ChatTemplate> tmpl;
  ChatEncoder chat;
  if (rt.tok.bpe && !a.model.empty())
    chat = [&](const nlohmann::ordered_json& m) {
      if (!tmpl) tmpl = load_chat_template(a.model, a.model, "train");
      return encode_chat_for_training(*rt.tok.bpe, *tmpl, m);
    };
  const std::vector<uint32_t> tokens = reuse_tokens ? read_token_file(tokens_path)
                                                    : tokenize_files(expand_text_files(a.data, "--data"), rt.tok, chat);
  for (uint32_t id : tokens)
    if (int64_t(id & ~kNoLoss) >= tm->vocab())
      throw ValueError("[train] token id " + std::to_string(id & ~kNoLoss) +
                       " is out of range for the model's vocab size " + std::to_string(tm->vocab()));
  const TrainSplit split = split_tokens(tokens, a.val_fraction, T);
  if (found && tm->steps_done() != found->step)
    throw IoError("[train] " + found->dir.string() + ": optimizer.safetensors is at step " +
                  std::to_string(tm->steps_done()) + ", train.json at step " + std::to_string(found->step));
  const CheckpointExtras extras{rt.json, rt.tok.bpe ? rt.tok.bpe->eos_id() : std::optional<uint32_t>(kByteEos),
                                train_settings_json(a)};

  // The start is sound: from here on the run folder is written.
  if (int sig = signals.received()) {
    say(std::string("stopped by ") + StopSignals::name(sig) + " before training started; nothing written");
    throw ExitCode{128 + sig};
  }
  if (a.overwrite && holds_train_run(out)) {
    remove_train_run(out);
    say("--overwrite: removed the previous run in " + out.string());
  }
  fs::create_directories(out);
  if (!reuse_tokens) write_token_file(tokens_path, tokens);
  if (found) {
    say("resuming " + out.string() + " at step " + std::to_string(found->step) + " of " + std::to_string(a.steps) +
        " from " + ckpt.string());
    if (const int64_t cut = cut_train_log(out / "log.jsonl", found->step))
      say("log.jsonl cut back to step " + std::to_string(found->step) + " (" + std::to_string(cut) +
          " lines past the checkpoint removed)");
  } else {
    say("new run in " + out.string() + ": " + tm->describe() +
        (a.model.empty() ? ", random init (seed " + std::to_string(a.seed) + ")" : ", from " + a.model));
  }
  say("checkpoints go to " + ckpt.string() + " (" +
      (a.save_every > 0 ? "every " + std::to_string(a.save_every) + " steps, " : std::string()) +
      "at the end and on Ctrl-C or SIGTERM)");
  if (tm->steps_done() >= a.steps) {
    say("the run is complete (step " + std::to_string(tm->steps_done()) + " of " + std::to_string(a.steps) +
        "); pass --steps N to train further");
    return;
  }
  std::ofstream log(out / "log.jsonl", found ? std::ios::app : std::ios::trunc);
  const bool tty = isatty(fileno(stderr));
  say(std::to_string(split.train.size()) + " train / " + std::to_string(split.val.size()) + " val tokens, B " +
      std::to_string(a.batch) + " x T " + std::to_string(T) + " (micro " + std::to_string(micro) + "), " +
      dev.name() + ", tokenizer " + rt.tok.name());

  auto evaluate = [&](int64_t step) {
    double sum = 0;
    int64_t batches = 0;
    for (int64_t i = 0; i < a.eval_batches; ++i) {
      Gpt2MicroBatch mb = sample_windows(split.val, micro, T, a.seed, kValWindows, 0, i * micro);
      if (std::none_of(mb.targets.begin(), mb.targets.end(), [](int32_t t) { return t >= 0; }))
        continue;  // only prompt tokens of conversations
      sum += tm->eval_loss(mb);
      ++batches;
    }
    const double val = sum / double(std::max<int64_t>(batches, 1));
    std::vector<uint32_t> prompt = {rt.tok.eos() ? *rt.tok.eos() : split.val[0]};
    std::vector<uint32_t> gen = tm->sample(prompt, a.sample_tokens, a.seed + uint64_t(step));
    const std::string text = rt.tok.decode(gen);
    if (tty) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "eval step %lld val_loss %.4f sample: %s\n", (long long)step, val,
                 nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    log << nlohmann::json{{"step", step}, {"val_loss", val}, {"sample", text}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return val;
  };

  const auto start = std::chrono::steady_clock::now();
  const int64_t first = tm->steps_done();
  int64_t saved = found ? found->step : -1;  // the step the checkpoint on disk holds
  double last_loss = 0, last_val = -1, tok_rate = 0;
  for (int64_t step = first; step < a.steps; ++step) {
    // Windows holding no target (prompt tokens of conversations only) are
    // drawn again from another stream: still a pure function of the step.
    std::vector<Gpt2MicroBatch> mbs;
    for (uint64_t attempt = 0; attempt < 64; ++attempt) {
      mbs.clear();
      bool any = false;
      for (int64_t m = 0; m < a.batch / micro; ++m) {
        mbs.push_back(sample_windows(split.train, micro, T, a.seed, kTrainWindows + (attempt << 40), step, m * micro));
        any = any || std::any_of(mbs.back().targets.begin(), mbs.back().targets.end(), [](int32_t t) { return t >= 0; });
      }
      if (any) break;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const Gpt2StepResult r = tm->step(mbs);
    const auto t1 = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(t1 - t0).count();
    const double elapsed = std::chrono::duration<double>(t1 - start).count();
    tok_rate = double((step - first + 1) * a.batch * T) / elapsed;
    const double eta = elapsed / double(step - first + 1) * double(a.steps - step - 1);
    last_loss = r.loss;
    log << nlohmann::json{{"step", step}, {"loss", r.loss}, {"grad_norm", r.grad_norm}, {"lr", r.lr},
                          {"step_s", dt}, {"tokens_per_s", tok_rate}}
               .dump()
        << "\n";
    log.flush();
    if (!log) throw IoError("[train] cannot write '" + (out / "log.jsonl").string() + "' (is the disk full?)");
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld loss %.4f grad_norm %.3f lr %.2e %.0f tok/s ETA %s",
                  (long long)(step + 1), (long long)a.steps, r.loss, r.grad_norm, r.lr, tok_rate,
                  fmt_time(eta).c_str());
    if (tty) std::fprintf(stderr, "\r%s\x1b[K", line);
    else std::fprintf(stderr, "%s\n", line);
    // Before an evaluation or a save could use NaN weights.
    if (diverged(r.loss, r.grad_norm)) {
      if (tty) std::fprintf(stderr, "\n");
      stop_diverged(step + 1, r.loss, r.grad_norm,
                         saved >= 0 ? "the checkpoint in " + ckpt.string() + " keeps step " + std::to_string(saved)
                                    : std::string("nothing was saved"),
                    step == first);
    }
    const bool last = step + 1 == a.steps || step + 1 == a.stop_at;
    const int sig = signals.received();
    if (!sig && ((a.eval_every > 0 && (step + 1) % a.eval_every == 0) || last)) last_val = evaluate(step + 1);
    if ((a.save_every > 0 && (step + 1) % a.save_every == 0) || last || sig) {
      tm->save(ckpt, extras);
      saved = step + 1;
    }
    if (sig) {
      if (tty) std::fprintf(stderr, "\n");
      say(std::string("stopped by ") + StopSignals::name(sig) + " after step " + std::to_string(step + 1) +
          "; checkpoint saved to " + ckpt.string());
      say("continue with: forge train --out " + out.string() + " --resume");
      throw ExitCode{128 + sig};
    }
    if (last) break;
  }
  if (tty) std::fprintf(stderr, "\n");
  say("saved step " + std::to_string(tm->steps_done()) + " to " + ckpt.string());
  if (a.json)
    std::printf("%s\n", nlohmann::json{{"steps", tm->steps_done()},
                                       {"loss", last_loss},
                                       {"val_loss", last_val},
                                       {"tokens_per_s", tok_rate},
                                       {"checkpoint", ckpt.string()},
                                       {"device", dev.name()}}
                            .dump()
                            .c_str());
  std::fflush(stdout);
  print_profile(dev, "the training run (with its evaluations)");
}

void add_options(CLI::App& sub, TrainArgs& a) {
  sub.add_option("--data", a.data, "Text files, or folders (their text files), to train on")
      ->expected(1, -1);
  sub.add_option("-m,--model", a.model, "Start from this model folder (config.json + safetensors)");
  add_preset_option(sub, a.preset, "Start from a new random model of this size", "--preset,--init");
  check_at_least(sub.add_option("--n-layer", a.n_layer, "New model: blocks (0: the preset's)"), 0);
  check_at_least(sub.add_option("--n-embd", a.n_embd, "New model: embedding width (0: the preset's)"), 0);
  check_at_least(sub.add_option("--n-head", a.n_head, "New model: attention heads (0: the preset's)"), 0);
  check_at_least(sub.add_option("--context", a.context, "New model: positions (0: the preset's)"), 0);
  sub.add_option("--out", a.out, "Run folder: tokens.bin, log.jsonl, checkpoint/");
  sub.add_flag("--resume", a.resume, "Continue the run in --out from its checkpoint, with its settings");
  sub.add_flag("--overwrite", a.overwrite, "Start again over the run in --out");
  add_tokenizer_option(sub, a.tokenizer, "Tokenizer (default: the model's); 'bytes': byte ids, saved as a tokenizer",
                       true);
  sub.add_option("--adapter", a.adapter, "LoRA: train this adapter folder (PEFT layout), the base frozen");
  sub.add_option("--lora-rank", a.lora_rank, "LoRA: train a fresh adapter of this rank, the base frozen");
  sub.add_option("--lora-alpha", a.lora_alpha, "LoRA: alpha (scale alpha / rank)")->default_str("2 x rank");
  sub.add_option("--lora-targets", a.lora_targets, "LoRA: the modules adapted, comma-separated")
      ->default_str(a.lora_targets + " (GPT-2: c_attn)");
  sub.add_flag("--rslora", a.rslora, "LoRA: scale alpha / sqrt(rank) (rank-stabilised)");
  add_dtype_option(sub, a.dtype)
      ->description("LoRA: the frozen dense base on the device, f32 or bf16 (half the memory; computed in f32). Full "
                    "training keeps f32 weights");
  sub.add_option("--fixed-batch", a.fixed_batch, "Parity mode: train on input_ids of this safetensors file");
  check_at_least(sub.add_option("--steps", a.steps, "Optimizer steps"), 1);
  check_at_least(sub.add_option("--batch", a.batch, "Sequences per step"), 1);
  check_at_least(sub.add_option("--seq", a.seq, "Sequence length T")->default_str("128, or the context if shorter"),
                 2);
  check_at_least(sub.add_option("--micro-batch", a.micro, "Sequences per micro-batch (gradient accumulation)")
                     ->default_str("--batch"),
                 1);
  check_between(sub.add_option("--lr", a.lr, "Peak learning rate"), 0);
  check_between(sub.add_option("--min-lr-ratio", a.min_lr_ratio, "Cosine decay floor as a fraction of --lr"), 0, 1);
  sub.add_flag("--constant-lr", a.constant_lr, "No cosine decay after the warmup");
  check_at_least(sub.add_option("--warmup", a.warmup, "Linear warmup steps"), 0);
  check_between(sub.add_option("--weight-decay", a.weight_decay, "AdamW decoupled weight decay"), 0);
  sub.add_option("--decay", a.decay, "Parameters that decay: all (torch default) or matrices")
      ->check(CLI::IsMember({"all", "matrices"}));
  check_between(sub.add_option("--grad-clip", a.grad_clip, "Max global gradient norm (0: off)"), 0);
  check_between(sub.add_option("--dropout", a.dropout,
                               "GPT-2: embedding, attention and residual dropout; Llama family: attention dropout "
                               "(when 0: config.json's attention_dropout)"),
                0, 0.99);
  check_at_least(sub.add_option("--eval-every", a.eval_every, "Validation loss and a sample every N steps (0: at the end)"),
                 0);
  check_at_least(sub.add_option("--eval-batches", a.eval_batches, "Micro-batches of held-out windows per evaluation"),
                 1);
  check_at_least(sub.add_option("--sample-tokens", a.sample_tokens, "Tokens of the sample at each evaluation"), 0);
  check_at_least(sub.add_option("--save-every", a.save_every, "Checkpoint every N steps (0: at the end and on Ctrl-C)"),
                 0);
  check_between(sub.add_option("--val-fraction", a.val_fraction, "Held-out tail of the tokens"), 0, 0.5);
  check_at_least(sub.add_option("--stop-at", a.stop_at, "Stop (with a checkpoint) after this step, as if interrupted; "
                                                        "the schedule still spans --steps (0: off)"),
                 0);
  check_unsigned(sub.add_option("--seed", a.seed, "Seed of initialisation, batches, dropout and samples"));
  add_device_option(sub, a.device);
  add_profile_flag(sub);
  sub.add_flag("--json", a.json, "Print a JSON summary as the last line of stdout");
}

const bool registered = register_command(
    {"train", "Train or fine-tune (fully or with LoRA) a model on text files, or on one fixed batch", [](CLI::App& sub) {
       static TrainArgs a;
       add_options(sub, a);
       sub.callback([&sub] {
         for (const CLI::Option* o : sub.get_options())
           if (o->count() > 0)
             for (const std::string& n : o->get_lnames()) a.given.insert("--" + n);
         run(a);
       });
     }});

}  // namespace
}  // namespace forge::cli
