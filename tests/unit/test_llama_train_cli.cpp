// forge train --fixed-batch on a Llama-family folder as a user runs it: the
// ten losses against the Hugging Face reference (mistral-tiny: untied head,
// sliding window), and --out writing the trained model in the Hugging Face
// layout (the source's tensor names, f32) that load_model reads back.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "forge/model.h"
#include "forge/safetensors.h"
#include "golden/reference_fixture.h"
#include "unit/cli_process.h"

using namespace forge;
using namespace forge::testing;

TEST(LlamaTrainCli, FixedBatchMatchesReferenceLossesAndSavesHfLayout) {
  ScratchDir dir("llama_train_cli");
  Fixture f("mistral-tiny");
  const CliRun r = run_cli({"train", "--model", f.dir, "--fixed-batch", f.dir + "/reference.safetensors", "--steps",
                            "10", "--lr", "1e-3", "--weight-decay", "0.01", "--json", "--device", "cpu", "--out",
                            (dir.path / "trained").string()},
                           dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(last_line(r.out));
  const std::vector<float> want = f.f32("train_losses");
  ASSERT_EQ(j["losses"].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(j["losses"][i].get<double>(), want[i], 2e-3) << "step " << i;  // as the golden test

  const SafetensorsFile src = SafetensorsFile::open(f.dir + "/model.safetensors");
  const SafetensorsFile out = SafetensorsFile::open(dir.path / "trained" / "model.safetensors");
  auto names = [](const SafetensorsFile& f) {
    std::vector<std::string> v;
    for (const auto& t : f.tensors()) v.push_back(t.name);
    std::sort(v.begin(), v.end());
    return v;
  };
  EXPECT_EQ(names(out), names(src));
  for (const auto& t : out.tensors()) EXPECT_EQ(t.dtype, StDType::F32) << t.name;
  auto model = load_model(dir.path / "trained", Device::cpu());
  const float trained = causal_lm_loss(model->forward(f.input_ids()), f.input_ids());
  EXPECT_LT(trained, j["losses"][9].get<double>()) << "the saved weights are the trained ones";
}
