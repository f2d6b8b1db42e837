// The settings of a `forge train` run: the parsed flags, their JSON form that
// every checkpoint stores (train.json), and how a resumed run takes them back.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "forge/gpt2_train.h"
#include "forge/train.h"

namespace forge::cli {

struct TrainArgs {
  std::vector<std::string> data;
  std::string model, preset, out, tokenizer, fixed_batch, device = "auto", decay = "all";
  std::string dtype = "f32";  // --dtype: a LoRA run's frozen dense base on the device, f32 or bf16
  int64_t steps = 100, batch = 8, seq = 0, micro = 0, warmup = 0, eval_every = 50, save_every = 0;
  int64_t eval_batches = 4, sample_tokens = 32, stop_at = 0;
  int64_t n_layer = 0, n_embd = 0, n_head = 0, context = 0;  // 0: the preset's
  double lr = 6e-4, min_lr_ratio = 0.1, weight_decay = 0.01, val_fraction = 0.1;
  float grad_clip = 1.0f, dropout = 0.0f;
  uint64_t seed = 1234;
  bool resume = false, overwrite = false, json = false, constant_lr = false;
  // LoRA: train the adapter in `adapter`, or a fresh one of rank lora_rank
  // (alpha 0: twice the rank) on lora_targets (GPT-2's default is c_attn,
  // train_lora.h), the base frozen.
  std::string adapter, lora_targets = "q_proj,k_proj,v_proj,o_proj";
  int64_t lora_rank = 0;
  double lora_alpha = 0;
  bool rslora = false;
  std::set<std::string> given;  // the long flags on the command line ("--lr", ...)
};

// Everything that defines the run (data, tokenizer, schedule, batch shape,
// seed, steps) and the knobs a resumed run keeps by default (micro-batch,
// evaluation and save intervals, device), keyed by flag name without "--".
nlohmann::json train_settings_json(const TrainArgs& a);

// Takes back the settings of a checkpoint at step `step` for the flags not
// given; a given flag that contradicts one that defines the run is a
// UsageError naming it. More --steps is accepted: the returned notes state
// what changes in the schedule.
std::vector<std::string> apply_saved_settings(TrainArgs& a, const nlohmann::json& saved, int64_t step);

// The trainer's configuration. Parity mode (`fixed`): a constant learning
// rate, no warmup, no dropout, no clipping unless --grad-clip is given.
Gpt2TrainConfig make_train_config(const TrainArgs& a, bool fixed);
// The same for a Llama-family trainer outside parity mode (FixedBatchTrainer
// never drops): its attention dropout is --dropout when above 0, else the
// config's attention_dropout.
TrainConfig make_llama_train_config(const TrainArgs& a);

// The dense weights to load for the run: bf16 only under LoRA, whose base is
// frozen; full training updates f32 weights (a UsageError says so).
DType train_weights_dtype(const TrainArgs& a);

// After a step: a loss or gradient norm that is no longer finite has made
// every weight NaN (AdamW spreads it), so the run stops before anything
// writes them, with stop_diverged's ValueError "[train] training diverged at
// step N (...); " + `kept` (what stays on disk) and the flags to change.
// At the first step of a run (first_step) no update has happened yet, so
// the weights as loaded (or the data) are named instead of the learning rate.
bool diverged(double loss, double grad_norm);
[[noreturn]] void stop_diverged(int64_t step, double loss, double grad_norm, const std::string& kept,
                                bool first_step);

// --fixed-batch: trains on one batch and prints the losses (train_fixed.cpp).
void run_fixed_batch(const TrainArgs& a);

}  // namespace forge::cli
