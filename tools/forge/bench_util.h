// What the benchmarks share: waiting for a device, timing a call the way
// the PyTorch anchors do, and timing a model's prefill and decode the same
// way for every family.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <nlohmann/json.hpp>
#include <vector>

#include "forge/generate.h"
#include "forge/model.h"

namespace forge::cli {

// On the CPU, j["blas"] = the matrix kernels that ran (Device::cpu_blas()):
// OpenBLAS's AVX2 and AVX-512 kernels differ by about 2x on one machine.
void add_blas(nlohmann::json& j, const Device& d);

// Waits until the device has finished what was submitted (nothing on the CPU).
void sync(const Device& d);
// Hands what was recorded to the device now, without waiting (nothing on the CPU).
void submit(const Device& d);

// Seconds per call of fn, after warm-up, over at least `min_iters` calls and
// `min_seconds`, timed as the PyTorch anchors' CUDA loops are: each call
// is submitted as soon as it is recorded, so that the device computes one
// while the host records the next, and the host waits once every kTimedBatch
// calls. Waiting after every call would add a read-back round trip to each
// (on the H200 a 1024 square read 0.113 ms a call that way). The warm-up
// lasts at least two calls and half of `min_seconds`: a GPU that idled while
// the host made the operands (a second for two 8192 squares) runs at lower
// clocks until it has been busy for a while.
template <class Fn>
double time_per_call(const Device& d, Fn fn, int min_iters, double min_seconds = 0.5) {
  constexpr int kTimedBatch = 10;
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  auto batch = [&] {
    for (int i = 0; i < kTimedBatch; ++i) {
      fn();
      submit(d);
    }
    sync(d);
  };
  fn();
  fn();
  sync(d);
  for (auto warm = std::chrono::steady_clock::now(); since(warm) < min_seconds / 2;) batch();
  int iters = 0;
  auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (iters < min_iters || elapsed < min_seconds) {
    batch();
    iters += kTimedBatch;
    elapsed = since(start);
  }
  return elapsed / iters;
}

// Seconds of the fastest prefill of T tokens (a fresh cache each time, ending
// with the sampled id read back), after at least a second of warm-up (a GPU
// raises its clocks only under sustained load and drops them when idle),
// over at least a second and `reps` calls.
double best_prefill_seconds(const CausalLM& model, int64_t T, int reps);

// Decode tokens/s of batch-1 greedy generation of `tokens` after `prompt`:
// one warm-up run, then the best of three. `stats` gets the last run's.
double best_decode_rate(const CausalLM& model, const std::vector<uint32_t>& prompt, int64_t tokens,
                        GenerateStats* stats = nullptr);
// Milliseconds a decoded token the host spent blocked reading ids back
// (decode_wait_ms of the benchmarks' JSON).
double decode_wait_ms(const GenerateStats& st);

// Host milliseconds to record one batch-1 decode step (forward and greedy
// sample, nothing waited for), and milliseconds a step takes in all, over
// `steps` steps fed back on the device. When the first is close to the second,
// decode is bound by the host's recording, not by the device.
struct DecodeSplit {
  double record_ms = 0, step_ms = 0;
};
DecodeSplit decode_record_split(const CausalLM& model, int64_t steps);

// --profile: the device time by kernel of a batch-1 decode step (32 steps
// fed back on the device, per step) and of one prefill of `prefill` tokens
// (none when 0), into r["decode_kernels"] / r["prefill_kernels"] and as
// tables on stderr. Nothing unless the device profiles.
void profile_decode_and_prefill(const CausalLM& model, const std::string& name, int64_t prefill, nlohmann::json& r);

// --rows: for each count, the aggregate decode of that many sequences
// stepping together (decode_rows, as forge serve's continuous batching runs
// them), each after a 16-token prompt in its own row, greedy on the device:
// {rows, step_ms, tokens_per_s} over `steps` steps after one warm-up, and
// "kernels" (printed too) when the device profiles, into
// r["batched_decode"], each also printed unless `json`; a model without
// per-row decode is an error.
void add_batched_decode(const CausalLM& model, const std::string& name, const std::vector<int64_t>& rows,
                        int64_t steps, bool json, nlohmann::json& r);

}  // namespace forge::cli
