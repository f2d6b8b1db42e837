// forge train: trains a GPT-2 on text files, from a checkpoint (--model DIR)
// or a random initialisation (--init PRESET).
//
//   forge train --data a.txt b.txt --init tiny --tokenizer bytes --out run/ --steps 200
//
// The text is tokenized once into OUT/tokens.bin; the last --val-fraction of
// it is held out for validation. Each step draws --batch random windows of
// --seq + 1 tokens (in micro-batches of --micro-batch sequences, gradients
// accumulated), every position predicting the next token. OUT/log.jsonl gets
// one line per step and per evaluation (validation loss and a sample of
// generated text); OUT/checkpoint/ holds the latest checkpoint (HF weights,
// optimizer state, step, seed). --resume continues from it: the batches and
// dropout masks are pure functions of (seed, step), so on the CPU the losses
// equal those of an uninterrupted run exactly.
//
// Parity mode: --fixed-batch IN.safetensors trains on IN's input_ids every
// step (HF labels: ids shifted inside, B * (T - 1) positions), at a constant
// learning rate, without dropout or clipping unless asked, and prints
// {"losses": [...], "grad_norm0": x} as the last line of stdout.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <unistd.h>

#include "command.h"
#include "devices.h"
#include "forge/gpt2_train.h"
#include "forge/safetensors.h"
#include "train_checkpoint.h"
#include "train_data.h"

namespace forge::cli {
namespace {

enum Stream : uint64_t { kTrainWindows = 0x747261696e, kValWindows = 0x76616c };

struct TrainArgs {
  std::vector<std::string> data;
  std::string model, init, out, tokenizer, fixed_batch, device = "auto", decay = "all";
  int64_t steps = 100, batch = 8, seq = 128, micro = 0, warmup = 0, eval_every = 50, save_every = 0;
  int64_t eval_batches = 4, sample_tokens = 32, stop_at = 0;
  double lr = 6e-4, min_lr_ratio = 0.1, weight_decay = 0.01, val_fraction = 0.1;
  float grad_clip = 1.0f, dropout = 0.0f;
  uint64_t seed = 1234;
  bool resume = false, json = false, constant_lr = false;
  CLI::Option* grad_clip_opt = nullptr;
};

std::string fmt_time(double s) {
  char b[32];
  const long t = long(s + 0.5);
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  return b;
}

Tensor read_fixed_ids(const std::string& path, int64_t vocab) {
  if (!std::filesystem::is_regular_file(path)) throw IoError("[train] --fixed-batch file '" + path + "' does not exist");
  SafetensorsFile f = SafetensorsFile::open(path);
  TensorView v = f.get("input_ids");
  if (v.shape().size() != 2 || v.shape()[1] < 2)
    throw ShapeError("[train] input_ids in " + path + " must be [B, T] with T >= 2, got " + shape_str(v.shape()));
  std::vector<float> values = v.to_f32();
  std::vector<uint32_t> ids(values.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (values[i] < 0 || values[i] >= float(vocab))
      throw ValueError("[train] input_ids[" + std::to_string(i) + "] = " + std::to_string(int64_t(values[i])) +
                       " is out of range for vocab size " + std::to_string(vocab));
    ids[i] = uint32_t(values[i]);
  }
  return Tensor::from_vector(ids, v.shape());
}

Gpt2TrainConfig make_config(const TrainArgs& a, bool fixed) {
  Gpt2TrainConfig c;
  c.schedule.lr = a.lr;
  c.schedule.warmup = fixed ? 0 : a.warmup;
  c.schedule.total = a.steps;
  c.schedule.min_ratio = a.min_lr_ratio;
  c.schedule.cosine = !(fixed || a.constant_lr);
  c.weight_decay = a.weight_decay;
  if (a.decay == "matrices") c.decays = gpt2_decay_matrices;
  c.grad_clip = fixed && !a.grad_clip_opt->count() ? 0.0f : a.grad_clip;
  c.dropout = fixed ? Gpt2Dropout{} : Gpt2Dropout{a.dropout, a.dropout, a.dropout};
  c.seed = a.seed;
  return c;
}

void run_fixed(const TrainArgs& a) {
  if (a.model.empty()) throw ValueError("[train] --fixed-batch needs --model DIR");
  const Device dev = resolve_devices(a.device)[0];
  Gpt2 model = Gpt2::load(a.model, dev);
  const Tensor ids = read_fixed_ids(a.fixed_batch, model.config().vocab_size);
  Gpt2Trainer trainer(model, make_config(a, true));
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  nlohmann::json losses = nlohmann::json::array();
  double grad_norm0 = 0;
  for (int64_t s = 0; s < a.steps; ++s) {
    const Gpt2StepResult r = trainer.step({mb});
    if (s == 0) grad_norm0 = r.grad_norm;
    losses.push_back(r.loss);
    std::fprintf(stderr, "step %lld loss %.6f grad_norm %.6f\n", (long long)s, r.loss, r.grad_norm);
  }
  if (!a.out.empty()) save_train_checkpoint(std::filesystem::path(a.out) / "checkpoint", model, trainer, {}, {});
  std::printf("%s\n", nlohmann::json{{"losses", losses}, {"grad_norm0", grad_norm0}}.dump().c_str());
}

TrainTokenizer make_tokenizer(const TrainArgs& a, std::filesystem::path& file) {
  TrainTokenizer t;
  if (a.tokenizer == "bytes") return t;
  std::filesystem::path src = a.tokenizer;
  const std::filesystem::path resumed = std::filesystem::path(a.out) / "checkpoint" / "tokenizer.json";
  if (src.empty() && a.resume && std::filesystem::exists(resumed)) src = resumed;
  if (src.empty() && !a.model.empty() && std::filesystem::exists(std::filesystem::path(a.model) / "tokenizer.json"))
    src = std::filesystem::path(a.model) / "tokenizer.json";
  if (src.empty())
    throw ValueError("[train] no tokenizer: pass --tokenizer FILE|DIR, or --tokenizer bytes for byte-level ids");
  t.bpe = Tokenizer::from_path(src);
  file = std::filesystem::is_directory(src) ? src / "tokenizer.json" : src;
  if (!std::filesystem::exists(file)) file.clear();
  return t;
}

void run(TrainArgs a) {
  if (!a.fixed_batch.empty()) return run_fixed(a);
  namespace fs = std::filesystem;
  if (a.data.empty()) throw ValueError("[train] --data FILE... is required (or --fixed-batch)");
  if (a.out.empty()) throw ValueError("[train] --out DIR is required");
  if (a.model.empty() == a.init.empty() && !a.resume)
    throw ValueError("[train] pass exactly one of --model DIR and --init PRESET");
  const int64_t micro = a.micro ? a.micro : a.batch;
  if (a.batch < 1 || micro < 1 || a.batch % micro != 0)
    throw ValueError("[train] --batch " + std::to_string(a.batch) + " must be a positive multiple of --micro-batch " +
                     std::to_string(micro));
  for (const auto& f : a.data)
    if (!fs::is_regular_file(f)) throw IoError("[train] data file '" + f + "' does not exist");
  const fs::path out = a.out, ckpt = out / "checkpoint";
  fs::create_directories(out);
  if (a.resume && !fs::exists(ckpt / "optimizer.safetensors"))
    throw IoError("[train] --resume: no checkpoint in '" + ckpt.string() + "'");

  const Device dev = resolve_devices(a.device)[0];
  Gpt2 model = a.resume ? Gpt2::load(ckpt, dev)
               : !a.model.empty() ? Gpt2::load(a.model, dev)
                                  : Gpt2::random(gpt2_preset(a.init), a.seed, dev);
  const Gpt2Config& cfg = model.config();
  const int64_t T = std::min(a.seq, cfg.n_positions);

  fs::path tok_file;
  const TrainTokenizer tok = make_tokenizer(a, tok_file);
  const fs::path tokens_path = out / "tokens.bin";
  std::vector<uint32_t> tokens;
  if (a.resume && fs::exists(tokens_path)) {
    tokens = read_token_file(tokens_path);
  } else {
    tokens = tokenize_files(a.data, tok);
    write_token_file(tokens_path, tokens);
  }
  for (uint32_t id : tokens)
    if (int64_t(id) >= cfg.vocab_size)
      throw ValueError("[train] token id " + std::to_string(id) + " is out of range for the model's vocab size " +
                       std::to_string(cfg.vocab_size));
  const TrainSplit split = split_tokens(tokens, a.val_fraction, T);

  Gpt2Trainer trainer(model, make_config(a, false));
  if (a.resume) {
    const auto meta = read_gpt2_train_state(ckpt, trainer);
    for (auto [key, value] : {std::pair<const char*, int64_t>{"batch", a.batch}, {"seq", T}}) {
      auto it = meta.find(key);
      if (it != meta.end() && it->second != std::to_string(value))
        throw ValueError("[train] --resume: the checkpoint was trained with " + std::string(key) + " " + it->second +
                         ", this run asks for " + std::to_string(value));
    }
    if (meta.count("seed") && meta.at("seed") != std::to_string(a.seed))
      throw ValueError("[train] --resume: the checkpoint's seed is " + meta.at("seed") + ", this run's " +
                       std::to_string(a.seed) + " (pass --seed " + meta.at("seed") + ")");
  }
  std::ofstream log(out / "log.jsonl", a.resume ? std::ios::app : std::ios::trunc);
  const bool tty = isatty(fileno(stderr));
  std::fprintf(stderr, "train: %lld train / %lld val tokens, B %lld x T %lld (micro %lld), %s, tokenizer %s\n",
               (long long)split.train.size(), (long long)split.val.size(), (long long)a.batch, (long long)T,
               (long long)micro, dev.name().c_str(), tok.name().c_str());

  auto evaluate = [&](int64_t step) {
    double sum = 0;
    for (int64_t i = 0; i < a.eval_batches; ++i) {
      Gpt2MicroBatch mb = sample_windows(split.val, micro, T, a.seed, kValWindows, 0, i * micro);
      sum += gpt2_eval_loss(model, mb.ids, mb.targets);
    }
    const double val = sum / double(std::max<int64_t>(a.eval_batches, 1));
    std::vector<uint32_t> prompt = {tok.eos() ? *tok.eos() : split.val[0]};
    Gpt2GenerateOptions go;
    go.max_new_tokens = std::min<int64_t>(a.sample_tokens, cfg.n_positions - 1);
    go.sample.temperature = 1.0f;
    go.sample.top_k = 40;
    go.sample.seed = a.seed + uint64_t(step);
    std::vector<uint32_t> gen = gpt2_generate(model, prompt, go);
    const std::string text = tok.decode(gen);
    if (tty) std::fprintf(stderr, "\n");
    std::fprintf(stderr, "eval step %lld val_loss %.4f sample: %s\n", (long long)step, val,
                 nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    log << nlohmann::json{{"step", step}, {"val_loss", val}, {"sample", text}}.dump(
               -1, ' ', false, nlohmann::json::error_handler_t::replace)
        << "\n";
    return val;
  };

  const auto start = std::chrono::steady_clock::now();
  const int64_t first = trainer.steps_done();
  double last_loss = 0, last_val = -1, tok_rate = 0;
  for (int64_t step = first; step < a.steps; ++step) {
    std::vector<Gpt2MicroBatch> mbs;
    for (int64_t m = 0; m < a.batch / micro; ++m)
      mbs.push_back(sample_windows(split.train, micro, T, a.seed, kTrainWindows, step, m * micro));
    const auto t0 = std::chrono::steady_clock::now();
    const Gpt2StepResult r = trainer.step(mbs);
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
    char line[256];
    std::snprintf(line, sizeof line, "step %lld/%lld loss %.4f grad_norm %.3f lr %.2e %.0f tok/s ETA %s",
                  (long long)(step + 1), (long long)a.steps, r.loss, r.grad_norm, r.lr, tok_rate,
                  fmt_time(eta).c_str());
    if (tty) std::fprintf(stderr, "\r%s\x1b[K", line);
    else std::fprintf(stderr, "%s\n", line);
    const bool last = step + 1 == a.steps || step + 1 == a.stop_at;
    if ((a.eval_every > 0 && (step + 1) % a.eval_every == 0) || last) last_val = evaluate(step + 1);
    if ((a.save_every > 0 && (step + 1) % a.save_every == 0) || last)
      save_train_checkpoint(ckpt, model, trainer, tok_file,
                            {{"tokenizer", tok.name()}, {"batch", std::to_string(a.batch)}, {"seq", std::to_string(T)}});
    if (last) break;
  }
  if (tty) std::fprintf(stderr, "\n");
  if (a.json)
    std::printf("%s\n", nlohmann::json{{"steps", trainer.steps_done()},
                                       {"loss", last_loss},
                                       {"val_loss", last_val},
                                       {"tokens_per_s", tok_rate},
                                       {"checkpoint", ckpt.string()},
                                       {"device", dev.name()}}
                            .dump()
                            .c_str());
}

const bool registered = register_command(
    {"train", "Train a GPT-2 on text files (or on one fixed batch for parity checks)", [](CLI::App& sub) {
       static TrainArgs a;
       sub.add_option("--data", a.data, "Text files to train on")->expected(1, -1);
       sub.add_option("--model", a.model, "Start from this model folder (config.json + safetensors)");
       sub.add_option("--init", a.init, "Start from a random model of this preset (124M, 355M, ..., tiny)");
       sub.add_option("--out", a.out, "Run folder: tokens.bin, log.jsonl, checkpoint/");
       sub.add_option("--tokenizer", a.tokenizer, "tokenizer.json or folder, or 'bytes' (default: the model's)");
       sub.add_option("--fixed-batch", a.fixed_batch, "Parity mode: train on input_ids of this safetensors file");
       sub.add_option("--steps", a.steps, "Optimizer steps")->check(CLI::PositiveNumber);
       sub.add_option("--batch", a.batch, "Sequences per step")->check(CLI::PositiveNumber);
       sub.add_option("--seq", a.seq, "Sequence length T")->check(CLI::Range(int64_t(2), int64_t(1) << 20));
       sub.add_option("--micro-batch", a.micro, "Sequences per micro-batch (gradient accumulation)")
           ->check(CLI::PositiveNumber);
       sub.add_option("--lr", a.lr, "Peak learning rate")->check(CLI::NonNegativeNumber);
       sub.add_option("--min-lr-ratio", a.min_lr_ratio, "Cosine decay floor as a fraction of --lr")
           ->check(CLI::Range(0.0, 1.0));
       sub.add_flag("--constant-lr", a.constant_lr, "No cosine decay after the warmup");
       sub.add_option("--warmup", a.warmup, "Linear warmup steps")->check(CLI::NonNegativeNumber);
       sub.add_option("--weight-decay", a.weight_decay, "AdamW decoupled weight decay")
           ->check(CLI::NonNegativeNumber);
       sub.add_option("--decay", a.decay, "Parameters that decay: all (torch default) or matrices")
           ->check(CLI::IsMember({"all", "matrices"}));
       a.grad_clip_opt = sub.add_option("--grad-clip", a.grad_clip, "Max global gradient norm (0: off)")
                             ->check(CLI::NonNegativeNumber);
       sub.add_option("--dropout", a.dropout, "Embedding, attention and residual dropout")
           ->check(CLI::Range(0.0f, 0.99f));
       sub.add_option("--eval-every", a.eval_every, "Validation loss and a sample every N steps (0: at the end)")
           ->check(CLI::NonNegativeNumber);
       sub.add_option("--eval-batches", a.eval_batches, "Micro-batches of held-out windows per evaluation")
           ->check(CLI::PositiveNumber);
       sub.add_option("--save-every", a.save_every, "Checkpoint every N steps (0: at the end)")
           ->check(CLI::NonNegativeNumber);
       sub.add_option("--val-fraction", a.val_fraction, "Held-out tail of the tokens")->check(CLI::Range(0.0, 0.5));
       sub.add_option("--stop-at", a.stop_at, "Stop (with a checkpoint) after this step, as if interrupted; "
                                              "the schedule still spans --steps")
           ->check(CLI::NonNegativeNumber);
       sub.add_flag("--resume", a.resume, "Continue from OUT/checkpoint");
       sub.add_option("--seed", a.seed, "Seed of initialisation, batches, dropout and samples");
       add_device_option(sub, a.device);
       sub.add_flag("--json", a.json, "Print a JSON summary as the last line of stdout");
       sub.callback([] { run(a); });
     }});

}  // namespace
}  // namespace forge::cli
