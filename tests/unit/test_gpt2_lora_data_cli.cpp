// GPT-2 LoRA over --data as a user runs it, through the trainer, checkpoints
// and adapter files every family shares: a fresh adapter over c_attn lowers
// the loss and its checkpoint is PEFT's layout (fan_in_fan_out) beside the
// optimizer state; the run resumed after --stop-at logs exactly the losses of
// an uninterrupted one (CPU); --adapter trains it further; JSONL text and
// chat JSONL train too; over an MLX 4-bit base forge eval/generate --adapter apply it and
// forge merge gives a dense model with the same logits; the WebGPU run
// follows the CPU's losses.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/lora.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "parity/parity.h"
#include "unit/cli_process.h"
#include "unit/lora_cli.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::testing;

namespace {

namespace fs = std::filesystem;

const std::string kModel = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

// forge train of a fresh rank-4 adapter over `model` on `data` (byte ids), 6
// steps of B 2 x T 16, into dir/out.
CliRun train_lora(const ScratchDir& dir, const std::string& model, const fs::path& data, const std::string& out,
                  std::vector<std::string> extra = {}) {
  std::vector<std::string> v = {"train", "--model", model, "--data", data.string(), "--tokenizer", "bytes",
                                "--lora-rank", "4", "--out", (dir.path / out).string(), "--steps", "6", "--batch",
                                "2", "--seq", "16", "--eval-every", "0", "--sample-tokens", "4", "--lr", "3e-2",
                                "--device", "cpu"};
  v.insert(v.end(), extra.begin(), extra.end());
  return run_cli(v, dir.path);
}

// input_ids [2, 8] for forge eval.
std::string write_batch(const ScratchDir& dir) {
  const std::string path = (dir.path / "batch.safetensors").string();
  const std::vector<int32_t> ids{3, 17, 100, 99, 5, 6, 7, 8, 42, 1, 2, 3, 4, 5, 6, 7};
  write_safetensors(path, {{"input_ids", StDType::I32, {2, 8}, std::as_bytes(std::span(ids))}});
  return path;
}

std::vector<float> eval_logits(const ScratchDir& dir, const std::string& model, const std::string& adapter,
                               const std::string& input, const std::string& device, const std::string& name) {
  std::vector<std::string> v = {"eval", "--model", model, "--input", input, "--output",
                                (dir.path / name).string(), "--device", device};
  if (!adapter.empty()) v.insert(v.end(), {"--adapter", adapter});
  const CliRun e = run_cli(v, dir.path);
  EXPECT_EQ(e.code, 0) << e.out;
  if (e.code != 0) return {};
  return logits_of(dir.path / name);
}

}  // namespace

// A fresh adapter trained over --data: the loss falls, the checkpoint holds
// the adapter (c_attn, fan_in_fan_out) and the optimizer state but no copy of
// the base, and forge eval --adapter applies it: the logits the library gives
// for base + checkpoint, moved away from the base's.
TEST(Gpt2LoraDataCli, FreshAdapterTrainsAndEvalAppliesIt) {
  ScratchDir dir("gpt2_lora_data");
  write_sample_text(dir.path / "d.txt");
  const CliRun r = train_lora(dir, kModel, dir.path / "d.txt", "run", {"--json"});
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("LoRA r 4 alpha 8 on c_attn (the base frozen)"), std::string::npos) << r.out;
  const std::vector<double> losses = logged_losses(dir.path / "run" / "log.jsonl");
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), losses.front() - 0.05);

  const fs::path ckpt = dir.path / "run" / "checkpoint";
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "train.json",
                        "tokenizer.json"})
    EXPECT_TRUE(fs::exists(ckpt / f)) << f;
  EXPECT_FALSE(fs::exists(ckpt / "model.safetensors")) << "the base is not copied";
  const LoraConfig c = read_adapter_config(ckpt);
  EXPECT_EQ(c.targets, std::vector<std::string>{"c_attn"});
  EXPECT_TRUE(c.fan_in_fan_out);
  EXPECT_EQ(c.rank, 4);
  const SafetensorsFile opt = SafetensorsFile::open(ckpt / "optimizer.safetensors");
  EXPECT_EQ(opt.tensors().size(), 2u * 2 * 2) << "m and v of A and B of c_attn in 2 blocks, nothing else";
  EXPECT_TRUE(opt.contains("m.base_model.model.transformer.h.1.attn.c_attn.lora_B.weight"));

  const std::string batch = write_batch(dir);
  const std::vector<float> got = eval_logits(dir, kModel, ckpt.string(), batch, "cpu", "with.safetensors");
  auto model = load_model(kModel, Device::cpu());
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{3, 17, 100, 99, 5, 6, 7, 8, 42, 1, 2, 3, 4, 5, 6, 7},
                                         {2, 8});
  const std::vector<float> base = model->forward(ids).to_f32();
  load_adapter(*model, ckpt);
  EXPECT_TRUE(all_close(got, model->forward(ids).to_f32(), 1e-5, 1e-5));
  EXPECT_FALSE(all_close(got, base, 1e-3, 0)) << "the adapter trained";
}

// Stopped at step 3 and resumed, the run logs exactly the losses of the
// uninterrupted one (the adapter and its moments come back from the
// checkpoint bit for bit); --adapter then trains the saved adapter further.
TEST(Gpt2LoraDataCli, ResumesExactlyAndTrainsTheAdapterFurther) {
  ScratchDir dir("gpt2_lora_resume");
  write_sample_text(dir.path / "d.txt");
  const CliRun whole = train_lora(dir, kModel, dir.path / "d.txt", "whole");
  ASSERT_EQ(whole.code, 0) << whole.out;
  const CliRun first = train_lora(dir, kModel, dir.path / "d.txt", "split", {"--stop-at", "3"});
  ASSERT_EQ(first.code, 0) << first.out;
  EXPECT_EQ(logged_losses(dir.path / "split" / "log.jsonl").size(), 3u);
  const CliRun rest = run_cli({"train", "--out", (dir.path / "split").string(), "--resume"}, dir.path);
  ASSERT_EQ(rest.code, 0) << rest.out;
  const std::vector<double> a = logged_losses(dir.path / "whole" / "log.jsonl");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(logged_losses(dir.path / "split" / "log.jsonl"), a);
  const auto adapter = [&](const std::string& run) {
    return SafetensorsFile::open(dir.path / run / "checkpoint" / "adapter_model.safetensors")
        .get("base_model.model.transformer.h.0.attn.c_attn.lora_B.weight")
        .to_f32();
  };
  EXPECT_EQ(adapter("split"), adapter("whole"));

  // A new run from the trained adapter starts where the first ended, not
  // where a fresh adapter starts.
  const CliRun more = run_cli({"train", "--model", kModel, "--data", (dir.path / "d.txt").string(), "--tokenizer",
                               "bytes", "--adapter", (dir.path / "whole" / "checkpoint").string(), "--out",
                               (dir.path / "more").string(), "--steps", "1", "--batch", "2", "--seq", "16",
                               "--sample-tokens", "4", "--lr", "3e-2", "--device", "cpu"},
                              dir.path);
  ASSERT_EQ(more.code, 0) << more.out;
  const std::vector<double> m = logged_losses(dir.path / "more" / "log.jsonl");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_LT(m[0], a.front() - 0.05);
}

// JSONL of {"text": ...} lines trains the adapter as plain text does; the
// LoRA flags without --model (a new model) are a usage error.
TEST(Gpt2LoraDataCli, JsonlTextAndErrors) {
  ScratchDir dir("gpt2_lora_jsonl");
  {
    std::ofstream f(dir.path / "d.jsonl");
    for (int i = 0; i < 60; ++i)
      f << nlohmann::json{{"text", "the cat sat on the mat number " + std::to_string(i) + ".\n"}}.dump() << "\n";
  }
  const CliRun r = train_lora(dir, kModel, dir.path / "d.jsonl", "run");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<double> losses = logged_losses(dir.path / "run" / "log.jsonl");
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), losses.front());

  const CliRun bad = run_cli({"train", "--preset", "tiny", "--data", (dir.path / "d.jsonl").string(), "--tokenizer",
                              "bytes", "--lora-rank", "4", "--out", (dir.path / "bad").string(), "--device", "cpu"},
                             dir.path);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--model DIR"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(dir.path / "bad"));
}

// Over an MLX 4-bit base (forge quantize): the adapter trains over --data,
// forge eval --adapter applies it, forge merge dequantizes the base and folds
// it in: a dense f32 model in GPT-2's Conv1D layout whose logits equal the
// quantized base's with the adapter within 1e-4 (the same dequantized weights,
// summed in another order), and whose greedy ids equal generate --adapter's.
TEST(Gpt2LoraDataCli, MergeIntoQuantizedBase) {
  ScratchDir dir("gpt2_lora_q4");
  const std::string q4 = (dir.path / "q4").string();
  const CliRun q = run_cli({"quantize", "--model", kModel, "--bits", "4", "--group-size", "32", "--out", q4}, dir.path);
  ASSERT_EQ(q.code, 0) << q.out;
  write_sample_text(dir.path / "d.txt");
  const CliRun r = train_lora(dir, q4, dir.path / "d.txt", "run", {"--lora-targets", "c_attn,c_fc"});
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<double> losses = logged_losses(dir.path / "run" / "log.jsonl");
  ASSERT_EQ(losses.size(), 6u);
  EXPECT_LT(losses.back(), losses.front());
  const std::string adapter = (dir.path / "run" / "checkpoint").string();

  const std::string batch = write_batch(dir);
  const std::vector<float> with = eval_logits(dir, q4, adapter, batch, "cpu", "with.safetensors");
  const std::vector<float> plain = eval_logits(dir, q4, "", batch, "cpu", "plain.safetensors");
  ASSERT_FALSE(with.empty());
  EXPECT_FALSE(all_close(with, plain, 1e-3, 0)) << "the adapter moves the logits";
  EXPECT_TRUE(all_close(merged_logits(dir, q4, adapter, batch), with, 1e-4, 1e-4));
  auto merged = load_model(dir.path / "merged", Device::cpu());
  EXPECT_EQ(merged->info().weights, "f32");
  const SafetensorsFile st = SafetensorsFile::open(dir.path / "merged" / "model.safetensors");
  EXPECT_EQ(st.get("h.0.attn.c_attn.weight").shape(), (Shape{32, 96}));
  EXPECT_EQ(st.get("wte.weight").shape(), (Shape{1000, 32}));

  auto greedy = [&](const std::string& model, const std::string& with_adapter) {
    std::vector<std::string> v = {"generate", "--model", model, "--prompt-ids", "3,17,100", "-n", "8", "--json",
                                  "--device", "cpu"};
    if (!with_adapter.empty()) v.insert(v.end(), {"--adapter", with_adapter});
    const CliRun g = run_cli(v, dir.path);
    EXPECT_EQ(g.code, 0) << g.out;
    return g.code == 0 ? nlohmann::json::parse(last_line(g.out))["ids"] : nlohmann::json();
  };
  const nlohmann::json ids = greedy(q4, adapter);
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(greedy((dir.path / "merged").string(), ""), ids);
}

// The same run on WebGPU follows the CPU's losses (within 5e-3, the
// trainers' WebGPU bound), and eval --adapter over the 4-bit base agrees
// with the CPU's.
TEST(Gpt2LoraDataCli, WebGpuFollowsTheCpu) {
  ScratchDir dir("gpt2_lora_webgpu");
  write_sample_text(dir.path / "d.txt");
  const std::string q4 = (dir.path / "q4").string();
  const CliRun q = run_cli({"quantize", "--model", kModel, "--bits", "4", "--group-size", "32", "--out", q4}, dir.path);
  ASSERT_EQ(q.code, 0) << q.out;
  // No sample and one evaluation batch: SwiftShader compiles fewer kernels.
  const std::vector<std::string> shorter = {"--steps", "3", "--sample-tokens", "0", "--eval-batches", "1"};
  const CliRun c = train_lora(dir, q4, dir.path / "d.txt", "cpu", shorter);
  ASSERT_EQ(c.code, 0) << c.out;
  std::vector<std::string> on_gpu = shorter;
  on_gpu.insert(on_gpu.end(), {"--device", "webgpu"});
  const CliRun g = train_lora(dir, q4, dir.path / "d.txt", "gpu", on_gpu);
  ASSERT_EQ(g.code, 0) << g.out;
  const std::vector<double> lc = logged_losses(dir.path / "cpu" / "log.jsonl"),
                            lg = logged_losses(dir.path / "gpu" / "log.jsonl");
  ASSERT_EQ(lc.size(), 3u);
  ASSERT_EQ(lg.size(), 3u);
  for (size_t i = 0; i < lc.size(); ++i) EXPECT_NEAR(lg[i], lc[i], 5e-3) << "step " << i;

  const std::string batch = write_batch(dir);
  const std::string adapter = (dir.path / "gpu" / "checkpoint").string();
  EXPECT_TRUE(all_close(eval_logits(dir, q4, adapter, batch, "webgpu", "gpu.safetensors"),
                        eval_logits(dir, q4, adapter, batch, "cpu", "cpu.safetensors"), 1e-3, 1e-3));
}

// Chat JSONL on GPT-2: the conversations rendered with the folder's chat
// template (GPT-2's tokenizer, a ChatML template), the loss on the
// assistant's tokens only; forge generate --chat then applies the adapter.
TEST(Gpt2LoraDataCli, ChatJsonlRun) {
  ScratchDir dir("gpt2_lora_chat");
  const std::string data = forge::testing::test_data_dir();
  const fs::path model = dir.path / "model";
  fs::create_directories(model);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::copy_file(data + "/gpt2-vocab50257/" + f, model / f);
  fs::copy_file(data + "/tokenizer-gpt2/tokenizer.json", model / "tokenizer.json");
  const auto tj = nlohmann::json::parse(std::ifstream(data + "/chat-templates/smollm2.json"));
  std::ofstream(model / "tokenizer_config.json")
      << nlohmann::json{{"chat_template", tj["template"]}, {"bos_token", "<|endoftext|>"},
                        {"eos_token", "<|endoftext|>"}}
             .dump();
  write_counting_chats(dir.path / "chats.jsonl");
  const CliRun r = run_cli({"train", "--model", model.string(), "--data", (dir.path / "chats.jsonl").string(),
                            "--lora-rank", "4", "--lora-targets", "c_attn,c_fc", "--out", (dir.path / "run").string(),
                            "--steps", "8", "--batch", "2", "--seq", "32", "--lr", "3e-2", "--sample-tokens", "4",
                            "--device", "cpu"},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<double> losses = logged_losses(dir.path / "run" / "log.jsonl");
  ASSERT_EQ(losses.size(), 8u);
  EXPECT_LT(losses.back(), losses.front());
  // A short system message: the template's default one fills the 64 positions.
  std::ofstream(dir.path / "m.json") << R"([{"role": "system", "content": "Add."},
                                           {"role": "user", "content": "What is 3 plus one?"}])";
  const CliRun g = run_cli({"generate", "--model", model.string(), "--adapter", (dir.path / "run" / "checkpoint").string(),
                            "--chat", "--messages", (dir.path / "m.json").string(), "-n", "4", "--device", "cpu"},
                           dir.path);
  EXPECT_EQ(g.code, 0) << g.out;
}
