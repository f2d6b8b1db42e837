// LoRA through the command line as a user runs it: `forge train
// --fixed-batch --adapter` (the ten adapter losses of the PEFT reference,
// the trained adapter written in PEFT's layout), `--lora-rank` for a fresh
// one, `forge eval --adapter` (the reference's logits), `forge merge` (the
// merged model's logits equal base + adapter's), and the errors.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "forge/lora.h"
#include "forge/model.h"
#include "forge/safetensors.h"
#include "forge/tokenizer.h"
#include "golden/reference_fixture.h"
#include "unit/cli_process.h"
#include "unit/lora_cli.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::testing;

namespace {

const std::string kAdapter = "llama3-tiny/adapter";

}  // namespace

TEST(LoraCli, FixedBatchTrainsTheAdapterAndSavesPeftLayout) {
  ScratchDir dir("lora_cli_train");
  Fixture base("llama3-tiny"), ref(kAdapter);
  const std::string batch = ref.dir + "/reference.safetensors";
  const CliRun r = run_cli({"train", "--model", base.dir, "--fixed-batch", batch, "--adapter", ref.dir, "--steps", "10",
                            "--lr", "1e-3", "--weight-decay", "0", "--json", "--device", "cpu", "--out",
                            (dir.path / "trained").string()},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  const std::vector<float> want = ref.f32("lora_train_losses");
  ASSERT_EQ(j["losses"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(j["losses"][i].get<double>(), want[i], 2e-3) << "step " << i;

  // The trained adapter, in PEFT's layout, equals the reference's after ten steps.
  const SafetensorsFile out = SafetensorsFile::open(dir.path / "trained" / "adapter_model.safetensors");
  ASSERT_EQ(out.tensors().size(), 28u);
  for (const TensorInfo& t : out.tensors()) {
    const std::string key = "trained." + t.name.substr(std::string("base_model.model.").size());
    EXPECT_TRUE(all_close(out.get(t.name).to_f32(), ref.f32(key), 5e-4, 0)) << t.name;
  }
  EXPECT_EQ(read_adapter_config(dir.path / "trained").rank, 4);

  // Evaluated with the trained adapter, the loss is below the last step's.
  const CliRun e = run_cli({"eval", "--model", base.dir, "--adapter", (dir.path / "trained").string(), "--input", batch,
                            "--output", (dir.path / "eval.safetensors").string(), "--device", "cpu"},
                           dir.path);
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_LT(SafetensorsFile::open(dir.path / "eval.safetensors").get("loss").to_f32()[0], want[9]);
}

TEST(LoraCli, FreshAdapterOfRankR) {
  ScratchDir dir("lora_cli_fresh");
  Fixture base("llama3-tiny"), ref(kAdapter);
  const CliRun r = run_cli({"train", "--model", base.dir, "--fixed-batch", ref.dir + "/reference.safetensors",
                            "--lora-rank", "2", "--lora-targets", "q_proj,v_proj", "--steps", "5", "--lr", "1e-2",
                            "--json", "--device", "cpu", "--out", (dir.path / "fresh").string()},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_LT(j["losses"][4].get<double>(), j["losses"][0].get<double>() - 1e-3);
  const LoraConfig c = read_adapter_config(dir.path / "fresh");
  EXPECT_EQ(c.rank, 2);
  EXPECT_EQ(c.alpha, 4);  // twice the rank by default
  EXPECT_EQ(c.targets, (std::vector<std::string>{"q_proj", "v_proj"}));
  EXPECT_EQ(SafetensorsFile::open(dir.path / "fresh" / "adapter_model.safetensors").tensors().size(), 2u * 2 * 2);
}

TEST(LoraCli, EvalWithAdapterAndMergeMatchTheReference) {
  ScratchDir dir("lora_cli_merge");
  Fixture base("llama3-tiny"), ref(kAdapter);
  const std::string input = ref.dir + "/reference.safetensors";
  const CliRun e = run_cli({"eval", "--model", base.dir, "--adapter", ref.dir, "--input", input, "--output",
                            (dir.path / "with.safetensors").string(), "--device", "cpu"},
                           dir.path);
  ASSERT_EQ(e.code, 0) << e.out;
  const std::vector<float> with = logits_of(dir.path / "with.safetensors");
  EXPECT_TRUE(all_close(with, ref.f32("logits_with_adapter"), 1e-4, 1e-4));

  EXPECT_TRUE(all_close(merged_logits(dir, base.dir, ref.dir, input), with, 1e-4, 1e-4));
}

TEST(LoraCli, ClearErrors) {
  ScratchDir dir("lora_cli_errors");
  Fixture base("llama3-tiny"), ref(kAdapter);
  const std::string batch = ref.dir + "/reference.safetensors";
  auto fails_with = [&](const std::vector<std::string>& args, const std::string& text) {
    const CliRun r = run_cli(args, dir.path);
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_NE(r.out.find(text), std::string::npos) << "wanted '" << text << "' in: " << r.out;
  };
  const std::vector<std::string> train = {"train", "--model", base.dir, "--fixed-batch", batch, "--steps", "1",
                                          "--device", "cpu"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = train;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  fails_with(with({"--lora-rank", "0"}), "rank");
  fails_with(with({"--lora-rank", "2", "--lora-targets", "q_proj,wq"}), "unknown target module 'wq'");
  fails_with(with({"--lora-rank", "2", "--lora-targets", "q_proj,,v_proj"}),
             "--lora-targets has an empty item in 'q_proj,,v_proj'");
  fails_with(with({"--lora-rank", "2", "--lora-targets", "q_proj,"}), "has an empty item");
  // Spaces after the commas are fine: the same two modules as without.
  const CliRun spaced = run_cli(with({"--lora-rank", "2", "--lora-targets", "q_proj, v_proj", "--json"}), dir.path);
  const CliRun plain = run_cli(with({"--lora-rank", "2", "--lora-targets", "q_proj,v_proj", "--json"}), dir.path);
  ASSERT_EQ(spaced.code, 0) << spaced.out;
  EXPECT_EQ(last_line(spaced.out), last_line(plain.out));
  fails_with(with({"--adapter", (dir.path / "nowhere").string()}), "nowhere");
  fails_with(with({"--adapter", ref.dir, "--lora-rank", "4"}), "--lora-rank");
  const std::string gpt2 = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";
  fails_with({"eval", "--model", gpt2, "--adapter", ref.dir, "--input", batch, "--output",
              (dir.path / "x.safetensors").string()},
             "Llama family");
  fails_with({"merge", "--model", base.dir, "--adapter", (dir.path / "nowhere").string(), "--out",
              (dir.path / "m").string()},
             "nowhere");
}

// forge train --data on a Llama-family folder with LoRA: checkpoints hold the
// adapter (PEFT layout) and the optimizer state, and a run stopped at step 3
// and resumed logs exactly the losses of an uninterrupted one (CPU).
TEST(LoraCli, DataRunWithLoraResumesExactly) {
  ScratchDir dir("lora_cli_data");
  write_sample_text(dir.path / "d.txt");
  const std::string base = std::string(forge::testing::test_data_dir()) + "/llama3-tiny";
  auto train = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> v = {"train", "--model", base, "--data", (dir.path / "d.txt").string(), "--tokenizer",
                                  "bytes", "--lora-rank", "4", "--out", (dir.path / out).string(), "--steps", "6",
                                  "--batch", "2", "--seq", "16", "--eval-every", "0", "--sample-tokens", "4",
                                  "--lr", "1e-2", "--device", "cpu"};
    v.insert(v.end(), extra.begin(), extra.end());
    return run_cli(v, dir.path);
  };
  const CliRun whole = train("whole", {});
  ASSERT_EQ(whole.code, 0) << whole.out;
  const CliRun first = train("split", {"--stop-at", "3"});
  ASSERT_EQ(first.code, 0) << first.out;
  const CliRun rest = run_cli({"train", "--out", (dir.path / "split").string(), "--resume"}, dir.path);
  ASSERT_EQ(rest.code, 0) << rest.out;
  const std::vector<double> a = logged_losses(dir.path / "whole" / "log.jsonl");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(logged_losses(dir.path / "split" / "log.jsonl"), a);
  EXPECT_LT(a.back(), a.front());
  const std::filesystem::path ckpt = dir.path / "whole" / "checkpoint";
  for (const char* f : {"adapter_config.json", "adapter_model.safetensors", "optimizer.safetensors", "train.json"})
    EXPECT_TRUE(std::filesystem::exists(ckpt / f)) << f;
  EXPECT_FALSE(std::filesystem::exists(ckpt / "model.safetensors")) << "the base is not copied";
  auto model = load_model(base, Device::cpu());
  load_adapter(*model, ckpt);
  EXPECT_EQ(attached_adapter(*model)->rank, 4);
}

// Without the LoRA flags every weight trains and the checkpoint is a model
// folder load_model reads.
TEST(LoraCli, DataRunFullFineTuningOfLlama) {
  ScratchDir dir("lora_cli_full");
  write_sample_text(dir.path / "d.txt");
  const std::string base = std::string(forge::testing::test_data_dir()) + "/qwen2-tiny";
  const CliRun r = run_cli({"train", "--model", base, "--data", (dir.path / "d.txt").string(), "--tokenizer", "bytes",
                            "--out", (dir.path / "run").string(), "--steps", "3", "--batch", "2", "--seq", "16",
                            "--sample-tokens", "4", "--lr", "1e-3", "--device", "cpu", "--json"},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::filesystem::path ckpt = dir.path / "run" / "checkpoint";
  for (const char* f : {"config.json", "model.safetensors", "optimizer.safetensors", "train.json"})
    EXPECT_TRUE(std::filesystem::exists(ckpt / f)) << f;
  auto trained = load_model(ckpt, Device::cpu());
  EXPECT_EQ(trained->info().family, "qwen2");
  const auto j = nlohmann::json::parse(last_line(r.out));
  EXPECT_EQ(j["steps"].get<int64_t>(), 3);
}

// forge merge over the MLX 4-bit base: a dense model whose logits are those
// of the quantized base with the adapter.
TEST(LoraCli, MergeOverQuantizedBase) {
  ScratchDir dir("lora_cli_merge_q");
  Fixture ref(kAdapter);
  const std::string q = std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx4";
  const std::string input = ref.dir + "/reference.safetensors";
  const CliRun e = run_cli({"eval", "--model", q, "--adapter", ref.dir, "--input", input, "--output",
                            (dir.path / "with.safetensors").string(), "--device", "cpu"},
                           dir.path);
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_TRUE(all_close(merged_logits(dir, q, ref.dir, input), logits_of(dir.path / "with.safetensors"), 1e-4, 1e-4));
  EXPECT_EQ(load_model(dir.path / "merged", Device::cpu())->info().weights, "f32");
}

// forge train on chat JSONL end to end: a small random Llama with SmolLM2's
// tokenizer and chat template, LoRA on conversations (loss on the assistant's
// tokens), then forge generate with the trained adapter.
TEST(LoraCli, ChatJsonlRun) {
  ScratchDir dir("lora_cli_chat");
  const std::filesystem::path model_dir = dir.path / "model";
  std::filesystem::create_directories(model_dir);
  const std::string data = forge::testing::test_data_dir();
  std::filesystem::copy_file(data + "/tokenizer-smollm2/tokenizer.json", model_dir / "tokenizer.json");
  const int64_t vocab = int64_t(Tokenizer::from_path(model_dir / "tokenizer.json").vocab_size());
  const std::string config = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": )" +
                             std::to_string(vocab) + R"(, "hidden_size": 16, "intermediate_size": 32,
    "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true})";
  std::ofstream(model_dir / "config.json") << config;
  auto model = random_model(parse_config(config, "config.json"), 3, Device::cpu());
  std::vector<HostTensor> w = model_weights(*model);
  std::vector<TensorToWrite> tensors;
  for (const HostTensor& t : w) tensors.push_back({t.name, StDType::F32, t.shape, std::as_bytes(std::span(t.values))});
  write_safetensors(model_dir / "model.safetensors", tensors);
  std::ifstream tf(data + "/chat-templates/smollm2.json");
  const auto tj = nlohmann::json::parse(tf);
  std::ofstream(model_dir / "tokenizer_config.json")
      << nlohmann::json{{"chat_template", tj["template"]}, {"bos_token", tj["bos_token"]}, {"eos_token", tj["eos_token"]}}
             .dump();
  write_counting_chats(dir.path / "chats.jsonl");
  const CliRun r = run_cli({"train", "--model", model_dir.string(), "--data", (dir.path / "chats.jsonl").string(),
                            "--lora-rank", "4", "--lora-targets", "q_proj,v_proj,down_proj", "--out",
                            (dir.path / "run").string(), "--steps", "8", "--batch", "2", "--seq", "32", "--lr", "1e-2",
                            "--sample-tokens", "4", "--device", "cpu", "--json"},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::vector<double> losses = logged_losses(dir.path / "run" / "log.jsonl");
  ASSERT_EQ(losses.size(), 8u);
  EXPECT_LT(losses.back(), losses.front());
  const CliRun g = run_cli({"generate", "--model", model_dir.string(), "--adapter",
                            (dir.path / "run" / "checkpoint").string(), "--chat", "--prompt", "What is 3 plus one?",
                            "-n", "4", "--device", "cpu"},
                           dir.path);
  EXPECT_EQ(g.code, 0) << g.out;
}

// GPT-2 through the same commands: `--lora-rank` trains a fresh adapter over
// c_attn (PEFT's default for GPT-2) and lowers the loss, `--adapter` keeps
// training it where it stopped, `forge eval --adapter` gives the logits of
// the merged model (whose checkpoint keeps the Conv1D layout).
TEST(LoraCli, Gpt2FreshAdapterTrainsEvaluatesAndMerges) {
  ScratchDir dir("lora_cli_gpt2");
  const std::string model = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";
  const std::string batch = (dir.path / "batch.safetensors").string();
  {
    const std::vector<int32_t> ids{3, 17, 400, 999, 5, 6, 7, 8, 42, 1, 2, 3, 4, 5, 6, 7};
    write_safetensors(batch, {{"input_ids", StDType::I32, {2, 8}, std::as_bytes(std::span(ids))}});
  }
  const std::vector<std::string> train{"train", "--model", model, "--fixed-batch", batch, "--lr", "1e-2",
                                       "--weight-decay", "0", "--json", "--device", "cpu"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = train;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const CliRun r = run_cli(with({"--lora-rank", "4", "--steps", "5", "--out", (dir.path / "a").string()}), dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto losses = nlohmann::json::parse(last_line(r.out))["losses"];
  EXPECT_LT(losses.back().get<double>(), losses.front().get<double>() - 1e-2);
  const LoraConfig c = read_adapter_config(dir.path / "a");
  EXPECT_EQ(c.targets, std::vector<std::string>{"c_attn"});
  EXPECT_TRUE(c.fan_in_fan_out);

  const CliRun more = run_cli(with({"--adapter", (dir.path / "a").string(), "--steps", "1"}), dir.path);
  ASSERT_EQ(more.code, 0) << more.out;
  const double resumed = nlohmann::json::parse(last_line(more.out))["losses"][0].get<double>();
  EXPECT_LT(resumed, losses.back().get<double>()) << "the saved adapter is the trained one";

  const CliRun e = run_cli({"eval", "--model", model, "--adapter", (dir.path / "a").string(), "--input", batch,
                            "--output", (dir.path / "with.safetensors").string(), "--device", "cpu"},
                           dir.path);
  ASSERT_EQ(e.code, 0) << e.out;
  const std::vector<float> with_adapter = logits_of(dir.path / "with.safetensors");
  EXPECT_TRUE(all_close(merged_logits(dir, model, (dir.path / "a").string(), batch), with_adapter, 1e-4, 1e-4));
  EXPECT_EQ(SafetensorsFile::open(dir.path / "merged" / "model.safetensors").get("h.0.attn.c_attn.weight").shape(),
            (Shape{32, 96}));
}
