// Training checkpoints in-process: weights written by write_gpt2_checkpoint
// load back bit for bit and evaluate to the same loss; the optimizer state
// round-trips so a restored trainer's next step equals the original's
// exactly (CPU). Also the learning-rate schedule's shape.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "forge/gpt2_train.h"
#include "forge/safetensors.h"
#include "unit/this_build.h"

using namespace forge;

namespace {

const std::string kDir = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

Tensor fixture_ids() {
  SafetensorsFile f = SafetensorsFile::open(kDir + "/reference.safetensors");
  std::vector<float> v = f.get("input_ids").to_f32();
  return Tensor::from_vector(std::vector<uint32_t>(v.begin(), v.end()), f.get("input_ids").shape());
}

}  // namespace

TEST(TrainCheckpoint, RoundTripIsBitExactAndResumesExactly) {
  const auto dir = std::filesystem::temp_directory_path() / ("forge_train_ckpt_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const Tensor ids = fixture_ids();
  const Gpt2MicroBatch mb{ids, gpt2_shifted_targets(ids)};
  Gpt2TrainConfig cfg;
  cfg.schedule.lr = 2e-3;
  cfg.grad_clip = 1.0f;
  cfg.dropout = {0.1f, 0.1f, 0.1f};
  cfg.seed = 3;

  Gpt2 model = Gpt2::load(kDir, Device::cpu());
  Gpt2Trainer trainer(model, cfg);
  trainer.step({mb});
  trainer.step({mb});
  write_gpt2_checkpoint(dir, model.config(), trainer.host_weights());
  write_gpt2_train_state(dir, trainer);

  Gpt2 loaded = Gpt2::load(dir, Device::cpu());
  Gpt2Trainer restored(loaded, cfg);
  read_gpt2_train_state(dir, restored);
  EXPECT_EQ(restored.steps_done(), 2);
  const auto wa = trainer.host_weights(), wb = restored.host_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i].values, wb[i].values) << wa[i].name;  // bit-exact
  const auto sa = trainer.host_state(), sb = restored.host_state();
  for (size_t i = 0; i < sa.size(); ++i) EXPECT_EQ(sa[i].values, sb[i].values) << sa[i].name;
  EXPECT_EQ(gpt2_eval_loss(model, ids, mb.targets), gpt2_eval_loss(loaded, ids, mb.targets));

  const Gpt2StepResult a = trainer.step({mb}), b = restored.step({mb});
  EXPECT_EQ(a.loss, b.loss);
  EXPECT_EQ(a.grad_norm, b.grad_norm);
  std::filesystem::remove_all(dir);
}

TEST(TrainCheckpoint, LrScheduleWarmupThenCosine) {
  Gpt2LrSchedule s;
  s.lr = 1.0;
  s.warmup = 4;
  s.total = 14;
  s.min_ratio = 0.1;
  EXPECT_DOUBLE_EQ(s.at(0), 0.25);
  EXPECT_DOUBLE_EQ(s.at(3), 1.0);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_NEAR(s.at(9), 0.55, 1e-12);  // halfway: (1 + 0.1) / 2
  EXPECT_DOUBLE_EQ(s.at(14), 0.1);
  EXPECT_DOUBLE_EQ(s.at(100), 0.1);
  s.cosine = false;
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
}

TEST(TrainCheckpoint, DecayPolicyAndErrors) {
  EXPECT_TRUE(gpt2_decay_matrices("h.0.attn.c_attn.weight", {32, 96}));
  EXPECT_FALSE(gpt2_decay_matrices("h.0.attn.c_attn.bias", {96}));
  Gpt2 model = Gpt2::load(kDir, Device::cpu());
  Gpt2Trainer trainer(model, Gpt2TrainConfig{});
  const Tensor ids = fixture_ids();
  EXPECT_THROW(trainer.step({}), ValueError);
  EXPECT_THROW(trainer.step({{ids, std::vector<int32_t>(32, -1)}}), ValueError);   // no target
  EXPECT_THROW(trainer.step({{ids, std::vector<int32_t>(32, 1000)}}), ValueError); // target >= V
  EXPECT_THROW(read_gpt2_train_state("/nonexistent/forge", trainer), IoError);
}

// Optimizer state whose step metadata is not a count is a forge IoError that
// names it (std::stoll used to escape as std::invalid_argument).
TEST(TrainCheckpoint, BadStepMetadataIsAnIoError) {
  const auto dir = std::filesystem::temp_directory_path() / ("forge_train_step_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  Gpt2 model = Gpt2::load(kDir, Device::cpu());
  Gpt2Trainer trainer(model, Gpt2TrainConfig{});
  write_gpt2_train_state(dir, trainer);
  // Same tensors, the step replaced.
  SafetensorsFile f = SafetensorsFile::open(dir / "optimizer.safetensors");
  std::vector<std::vector<std::byte>> keep;
  keep.reserve(f.tensors().size());  // the spans below point into these
  std::vector<TensorToWrite> tensors;
  for (const TensorInfo& info : f.tensors()) {
    TensorView v = f.view(info);
    keep.emplace_back(v.bytes.begin(), v.bytes.end());
    tensors.push_back({info.name, info.dtype, info.shape, keep.back()});
  }
  auto meta = f.metadata();
  for (const char* bad : {"abc", "-3", "12x"}) {
    meta["step"] = bad;
    write_safetensors(dir / "optimizer.safetensors", tensors, meta);
    try {
      read_gpt2_train_state(dir, trainer);
      ADD_FAILURE() << "no error for step '" << bad << "'";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("step '") + bad + "'"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

// A config with zero heads is refused before any division by it.
TEST(TrainCheckpoint, ZeroHeadConfigIsRefused) {
  Gpt2Config c = gpt2_preset("tiny");
  c.n_head = 0;
  EXPECT_THROW(Gpt2::random(c, 1, Device::cpu()), Error);
}
