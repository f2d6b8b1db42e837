// LoRA adapters against PEFT-layout references (tests/fixtures/llama3-tiny/
// adapter: r 4, alpha 8 on q/k/v/o/gate/up/down, B non-zero; made with
// transformers in f32 from the bf16 base): the logits and loss with the
// adapter (1e-4 on the CPU, 1e-3 on WebGPU, as the base model's golden
// test), ten AdamW steps of the adapter alone (lr 1e-3, weight decay 0,
// labels = input_ids shifted) within 2e-3 / 5e-3 as full fine-tuning's, and
// the trained A and B.
//
// Then: the A / B gradients against finite differences (dense and quantized
// base), saving in PEFT's layout and reading back, a fresh adapter leaving
// the output unchanged and training with the base frozen, merging, and the
// errors for adapters that do not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "forge/gpt2_train.h"
#include "forge/lora.h"
#include "forge/model.h"
#include "forge/train.h"
#include "golden/finite_differences.h"
#include "golden/reference_fixture.h"
#include "models/llama/train.h"
#include "parity/parity.h"
#include "unit/cli_process.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::all_close;
using forge::testing::Fixture;
using forge::testing::gpu_device;

namespace {

const std::string kBase = "llama3-tiny";
std::string adapter_dir() { return std::string(forge::testing::test_data_dir()) + "/llama3-tiny/adapter"; }

TrainConfig lora_config() {
  TrainConfig c;
  c.optimizer.schedule.lr = 1e-3;
  c.optimizer.schedule.cosine = false;
  c.optimizer.weight_decay = 0.0;
  return c;
}

void check_logits(const Device& dev, double tol) {
  Fixture base(kBase), ref(kBase + "/adapter");
  auto model = load_model(base.dir, dev);
  load_adapter(*model, adapter_dir());
  const Tensor ids = ref.input_ids();
  const Tensor logits = model->forward(ids);
  ASSERT_EQ(logits.shape(), ref.shape("logits_with_adapter"));
  EXPECT_TRUE(all_close(logits.to_f32(), ref.f32("logits_with_adapter"), tol, tol)) << dev.name();
  EXPECT_NEAR(causal_lm_loss(logits, ids), ref.f32("loss_with_adapter")[0], tol) << dev.name();
  // Without it, the base's logits again (the delta is what moved them).
  auto plain = load_model(base.dir, dev);
  EXPECT_FALSE(all_close(plain->forward(ids).to_f32(), ref.f32("logits_with_adapter"), tol, tol));
}

void check_training(const Device& dev, double tol) {
  Fixture base(kBase), ref(kBase + "/adapter");
  auto model = load_model(base.dir, dev);
  load_adapter(*model, adapter_dir());
  const std::vector<float> embed_before = model_weights(*model)[0].values;
  LlamaTrainer trainer(*model, lora_config());
  const Tensor ids = ref.input_ids();
  const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
  const std::vector<float> want = ref.f32("lora_train_losses");
  ASSERT_EQ(want.size(), 10u);
  for (size_t s = 0; s < want.size(); ++s)
    EXPECT_NEAR(trainer.step({mb}).loss, want[s], tol) << "step " << s << " on " << dev.name();
  // The trained adapter: ten Adam updates of at most lr each, so 1e-3 of
  // drift is a whole step's worth; the reference moved every weight ~1e-2.
  const std::vector<HostTensor> trained = trainer.host_weights();
  ASSERT_EQ(trained.size(), 2u * 7 * 2);
  for (const HostTensor& t : trained) {
    const std::string key = "trained." + t.name.substr(std::string("base_model.model.").size());
    ASSERT_TRUE(ref.has(key)) << key;
    EXPECT_TRUE(all_close(t.values, ref.f32(key), 1e-3 * 0.5, 0)) << key << " on " << dev.name();
  }
  EXPECT_EQ(model_weights(*model)[0].values, embed_before) << "the base is frozen";
}

}  // namespace

TEST(LoraGolden, LogitsWithAdapterCpu) { check_logits(Device::cpu(), 1e-4); }
TEST(LoraGolden, LogitsWithAdapterWebGpu) { check_logits(gpu_device(), 1e-3); }
TEST(LoraGolden, TenAdapterStepsCpu) { check_training(Device::cpu(), 2e-3); }
TEST(LoraGolden, TenAdapterStepsWebGpu) { check_training(gpu_device(), 5e-3); }

// The A and B gradients against central differences of the mean loss on a
// tiny random model with biases and GQA, and on the MLX 4-bit fixture (LoRA
// over a quantized base: dx flows through the dequantized weights).
void check_lora_grads(CausalLM& model, const Tensor& ids) {
  const auto& m = dynamic_cast<const models::LlamaModel&>(model);
  const std::vector<int32_t> targets = gpt2_shifted_targets(ids);
  int64_t n = 0;
  for (int32_t t : targets) n += t >= 0;
  auto loss = [&] {
    models::LlamaActs a = models::llama_forward_train(m, ids);
    return double(models::llama_backward(m, a, targets, 0, nullptr).to_vector<float>()[0]) / double(n);
  };
  models::LlamaParams g;
  g.lora_only = true;
  {
    models::LlamaActs a = models::llama_forward_train(m, ids);
    models::llama_backward(m, a, targets, float(1.0 / double(n)), &g);
  }
  std::vector<models::LlamaLayer> layers = m.layers();
  auto named = models::llama_lora_named(layers);
  auto grads = models::llama_lora_named(g.layers);
  std::mt19937 rng(5);
  forge::testing::expect_gradients_match_differences(named, grads, loss, rng, 3, "");
}

// A and B drawn large (so every path carries gradient) in place.
void randomise_adapter(CausalLM& model, uint32_t seed) {
  const auto& m = dynamic_cast<const models::LlamaModel&>(model);
  std::vector<models::LlamaLayer> layers = m.layers();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-0.3f, 0.3f);
  for (auto& [name, t] : models::llama_lora_named(layers)) {
    float* v = t->data<float>();
    for (int64_t i = 0; i < t->numel(); ++i) v[i] = d(rng);
  }
}

TEST(LoraGolden, GradientsMatchFiniteDifferencesCpu) {
  const ModelConfig mc = parse_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 40, "hidden_size": 16,
    "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
    "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
    "attention_bias": true, "mlp_bias": true})",
                                      "test/config.json");
  auto model = random_model(mc, 7, Device::cpu());
  attach_new_adapter(*model, {.rank = 3, .alpha = 6, .targets = {"q_proj", "v_proj", "o_proj", "up_proj", "down_proj"}},
                     1);
  randomise_adapter(*model, 2);
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{1, 5, 9, 2, 33, 7, 7, 0, 12, 3, 38, 20, 4, 4, 17, 8},
                                         {2, 8});
  check_lora_grads(*model, ids);
}

TEST(LoraGolden, GradientsOverQuantizedBaseCpu) {
  auto model = load_model(std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx4", Device::cpu());
  attach_new_adapter(*model, {.rank = 2, .alpha = 4, .targets = {"k_proj", "gate_proj", "down_proj"}, .rslora = true},
                     3);
  randomise_adapter(*model, 4);
  const Tensor ids = Tensor::from_vector(std::vector<uint32_t>{3, 141, 59, 26, 535, 89, 79, 323, 846, 264}, {1, 10});
  check_lora_grads(*model, ids);
}

// Saved, the adapter is PEFT's layout again: the same keys and shapes as the
// fixture's file, a config PEFT reads, and the same logits when loaded back.
TEST(LoraGolden, SaveAndLoadRoundTripCpu) {
  Fixture base(kBase), ref(kBase + "/adapter");
  forge::testing::ScratchDir dir("lora_save");
  auto model = load_model(base.dir, Device::cpu());
  load_adapter(*model, adapter_dir());
  save_adapter(*model, dir.path / "a", "llama3-tiny");
  const SafetensorsFile want = SafetensorsFile::open(adapter_dir() + "/adapter_model.safetensors");
  const SafetensorsFile got = SafetensorsFile::open(dir.path / "a" / "adapter_model.safetensors");
  ASSERT_EQ(got.tensors().size(), want.tensors().size());
  for (const TensorInfo& t : want.tensors()) {
    ASSERT_TRUE(got.contains(t.name)) << t.name;
    EXPECT_EQ(got.get(t.name).shape(), t.shape) << t.name;
    EXPECT_EQ(got.get(t.name).to_f32(), want.get(t.name).to_f32()) << t.name;
  }
  const LoraConfig c = read_adapter_config(dir.path / "a");
  EXPECT_EQ(c.rank, 4);
  EXPECT_EQ(c.alpha, 8);
  EXPECT_EQ(c.targets.size(), 7u);
  EXPECT_FALSE(std::filesystem::exists(dir.path / "a" / "adapter_config.json.tmp"));
  auto again = load_model(base.dir, Device::cpu());
  load_adapter(*again, dir.path / "a");
  EXPECT_TRUE(all_close(again->forward(ref.input_ids()).to_f32(), ref.f32("logits_with_adapter"), 1e-4, 1e-4));
}

// A fresh adapter (B = 0) leaves the logits as they were (up to the order of
// the f32 sums: with adapters on q and v their products are taken apart
// from k's, no longer as one joined product, and the BLAS may block the
// narrower products differently); training moves only A and B (on a 4-bit
// base as on a dense one) and lowers the loss.
TEST(LoraGolden, FreshAdapterTrainsWithBaseFrozenCpu) {
  for (const std::string name : {"llama3-tiny", "llama-tiny-mlx4"}) {
    Fixture f(name);
    auto model = load_model(f.dir, Device::cpu());
    const Tensor ids = f.input_ids();
    const std::vector<float> before = model->forward(ids).to_f32();
    attach_new_adapter(*model, {.rank = 4, .alpha = 8, .targets = {"q_proj", "v_proj"}}, 11);
    ASSERT_TRUE(attached_adapter(*model));
    EXPECT_TRUE(all_close(model->forward(ids).to_f32(), before, 1e-6, 1e-5)) << name;
    LlamaTrainer trainer(*model, lora_config());
    const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
    const float first = trainer.step({mb}).loss;
    float last = first;
    for (int s = 0; s < 4; ++s) last = trainer.step({mb}).loss;
    EXPECT_LT(last, first - 1e-3) << name;
    EXPECT_EQ(trainer.host_weights().size(), 2u * 2 * 2) << name;
    // The base is untouched: removing the delta gives the logits of before.
    auto fresh = load_model(f.dir, Device::cpu());
    const Tensor trained = model->forward(ids);
    EXPECT_FALSE(all_close(trained.to_f32(), before, 1e-5, 0)) << name;
  }
}

// Merged into the weights, the model computes what base + adapter computed.
TEST(LoraGolden, MergedModelMatchesAdapterCpu) {
  Fixture base(kBase), ref(kBase + "/adapter");
  auto model = load_model(base.dir, Device::cpu());
  load_adapter(*model, adapter_dir());
  merge_adapter(*model);
  EXPECT_FALSE(attached_adapter(*model));
  EXPECT_TRUE(all_close(model->forward(ref.input_ids()).to_f32(), ref.f32("logits_with_adapter"), 1e-4, 1e-4));
  // Over the 4-bit base (the adapter has its shapes): dequantized, then merged.
  auto q = load_model(std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx4", Device::cpu());
  load_adapter(*q, adapter_dir());
  const std::vector<float> with = q->forward(ref.input_ids()).to_f32();
  merge_adapter(*q);
  EXPECT_TRUE(all_close(q->forward(ref.input_ids()).to_f32(), with, 1e-4, 1e-4));
  const std::vector<HostTensor> w = model_weights(*q);
  EXPECT_EQ(w.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(w.front().shape, (Shape{1000, 128}));
  EXPECT_THROW(merge_adapter(*q), ValueError) << "nothing attached any more";
}

TEST(LoraGolden, AdaptersThatDoNotFitAreErrors) {
  forge::testing::ScratchDir dir("lora_errors");
  auto model = load_model(Fixture(kBase).dir, Device::cpu());
  auto write = [&](const std::string& sub, const std::string& config) {
    std::filesystem::create_directories(dir.path / sub);
    std::ofstream(dir.path / sub / "adapter_config.json") << config;
    std::filesystem::copy_file(adapter_dir() + "/adapter_model.safetensors",
                               dir.path / sub / "adapter_model.safetensors");
    return dir.path / sub;
  };
  const std::string targets = R"("target_modules": ["q_proj","k_proj","v_proj","o_proj","gate_proj","up_proj","down_proj"])";
  // The file's tensors are r 4.
  EXPECT_THROW(load_adapter(*model, write("r8", R"({"peft_type": "LORA", "r": 8, "lora_alpha": 8, )" + targets + "}")),
               ShapeError);
  EXPECT_THROW(load_adapter(*model, write("r0", R"({"peft_type": "LORA", "r": 0, "lora_alpha": 8, )" + targets + "}")),
               ValueError);
  EXPECT_THROW(load_adapter(*model, write("unknown", R"({"r": 4, "lora_alpha": 8, "target_modules": ["qkv_proj"]})")),
               ValueError);
  // Fewer targets than the file holds: keys for modules not targeted.
  EXPECT_THROW(load_adapter(*model, write("fewer", R"({"r": 4, "lora_alpha": 8, "target_modules": ["q_proj"]})")),
               ValueError);
  EXPECT_THROW(load_adapter(*model, write("dora", R"({"r": 4, "lora_alpha": 8, "use_dora": true, )" + targets + "}")),
               ValueError);
  EXPECT_THROW(load_adapter(*model, dir.path / "missing"), IoError);
  std::filesystem::create_directories(dir.path / "no_weights");
  std::filesystem::copy_file(adapter_dir() + "/adapter_config.json", dir.path / "no_weights" / "adapter_config.json");
  EXPECT_THROW(load_adapter(*model, dir.path / "no_weights"), IoError);
  EXPECT_FALSE(attached_adapter(*model)) << "a failed load attaches nothing";
  // Another base: hidden 64 instead of 128.
  const ModelConfig mc = parse_config(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 1000, "hidden_size": 64,
    "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
    "max_position_embeddings": 64, "rms_norm_eps": 1e-5, "rope_theta": 10000.0})",
                                      "test/config.json");
  auto other = random_model(mc, 1, Device::cpu());
  EXPECT_THROW(load_adapter(*other, adapter_dir()), ShapeError);
  EXPECT_THROW(attach_new_adapter(*model, {.rank = 0}, 1), ValueError);
  EXPECT_THROW(attach_new_adapter(*model, {.targets = {"c_attn"}}, 1), ValueError);
}

// Generation reads the adapter in prefill and in cached decode alike: the
// logits of a cached prefill and of one cached decode step equal those of
// the full forward with the adapter (1e-4), which differ from the base's.
TEST(LoraGolden, CachedDecodeAppliesTheAdapterCpu) {
  Fixture base(kBase);
  auto model = load_model(base.dir, Device::cpu());
  std::vector<uint32_t> seq = base.ids("generate_prompt");
  const int64_t n = int64_t(seq.size());
  const std::vector<float> plain = model->forward(Tensor::from_vector(seq, {1, n})).to_f32();
  load_adapter(*model, adapter_dir());
  KvCache cache = model->new_cache(1);
  const std::vector<float> prefill = model->forward_cached(Tensor::from_vector(seq, {1, n}), cache).to_f32();
  seq.push_back(7);
  const std::vector<float> step = model->forward_cached(Tensor::from_vector(std::vector<uint32_t>{7}, {1, 1}), cache).to_f32();
  const std::vector<float> full = model->forward(Tensor::from_vector(seq, {1, n + 1})).to_f32();
  const size_t V = size_t(model->vocab_size());
  auto row = [&](const std::vector<float>& v, int64_t t) {
    return std::vector<float>(v.begin() + long(size_t(t) * V), v.begin() + long(size_t(t + 1) * V));
  };
  EXPECT_TRUE(all_close(prefill, row(full, n - 1), 1e-4, 1e-4));
  EXPECT_TRUE(all_close(step, row(full, n), 1e-4, 1e-4));
  EXPECT_FALSE(all_close(prefill, row(plain, n - 1), 1e-3, 0)) << "the adapter changes the logits";
}

// LoRA over the MLX 4-bit base on WebGPU against the CPU: the logits with
// the adapter (1e-3, as the quantized model's golden bound) and three
// training steps of it (5e-3, as the other WebGPU training bounds).
TEST(LoraGolden, QuantizedBaseMatchesCpuWebGpu) {
  const std::string dir = std::string(forge::testing::test_data_dir()) + "/llama-tiny-mlx4";
  Fixture f("llama-tiny-mlx4");
  const Tensor ids = f.input_ids();
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<float>> losses;
  for (const Device& dev : {Device::cpu(), gpu_device()}) {
    auto model = load_model(dir, dev);
    load_adapter(*model, adapter_dir());
    logits.push_back(model->forward(ids).to_f32());
    LlamaTrainer trainer(*model, lora_config());
    const TrainBatch mb{ids, gpt2_shifted_targets(ids)};
    losses.emplace_back();
    for (int s = 0; s < 3; ++s) losses.back().push_back(trainer.step({mb}).loss);
  }
  EXPECT_TRUE(all_close(logits[1], logits[0], 1e-3, 1e-3));
  EXPECT_TRUE(all_close(losses[1], losses[0], 5e-3, 0));
  EXPECT_LT(losses[0][2], losses[0][0]);
}
