// Weights that are not finite never turn into made-up tokens: the step whose
// logits hold a NaN or +inf ends generation with an error naming it, on both
// backends, with and without the cache (the cached loop records a step
// ahead before it reads an id), and `forge serve` answers such a request
// with a 500 that says so and goes on serving. eval refuses such a loss
// instead of printing "nan" (null in JSON) with exit code 0.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "forge/error.h"
#include "forge/generate.h"
#include "forge/model.h"
#include "parity/parity.h"
#include "unit/cli_process.h"
#include "unit/serve_process.h"
#include "unit/test_safetensors_util.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using forge::testing::TempDir;
using forge::testing::test_devices;

const fs::path kData = forge::testing::test_data_dir();

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Sets element `element` of the first tensor whose name holds `tensor` in
// DIR/model.safetensors to NaN (f32, bf16 or f16 storage).
void poison(const fs::path& dir, const std::string& tensor, int64_t element) {
  std::string bytes = read_all(dir / "model.safetensors");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  const json h = json::parse(bytes.substr(8, n));
  for (const auto& [name, t] : h.items()) {
    if (name.find(tensor) == std::string::npos) continue;
    const std::string dtype = t.at("dtype");
    const size_t width = dtype == "F32" ? 4 : 2;
    const size_t at = 8 + n + t.at("data_offsets")[0].get<size_t>() + size_t(element) * width;
    if (dtype == "F32") std::memcpy(&bytes[at], "\x00\x00\xc0\x7f", 4);
    else if (dtype == "BF16") std::memcpy(&bytes[at], "\xc0\x7f", 2);
    else std::memcpy(&bytes[at], "\x00\x7e", 2);  // F16
    std::ofstream(dir / "model.safetensors", std::ios::binary | std::ios::trunc)
        .write(bytes.data(), std::streamsize(bytes.size()));
    return;
  }
  FAIL() << "no tensor named like " << tensor << " in " << dir;
}

// A copy of fixture `name` in `root` with one element of `tensor` NaN.
fs::path poisoned_copy(const fs::path& root, const std::string& name, const std::string& tensor, int64_t element) {
  const fs::path dir = root / name;
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(kData / name)) fs::copy_file(e.path(), dir / e.path().filename());
  poison(dir, tensor, element);
  return dir;
}

// The ValueError message of generate, or "" when it returns.
std::string generate_error(const forge::CausalLM& m, const std::vector<uint32_t>& prompt, bool use_cache,
                           float temperature, int64_t n) {
  forge::GenerateOptions o;
  o.max_new_tokens = n;
  o.use_cache = use_cache;
  o.sample.temperature = temperature;
  o.sample.seed = 3;
  try {
    forge::generate(m, prompt, o);
  } catch (const forge::ValueError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A NaN in a layer's weight: the logits after the prompt are NaN already.
TEST(NonFiniteLogits, PoisonedLayerWeightFailsAtTheFirstToken) {
  TempDir tmp;
  const fs::path llama = poisoned_copy(tmp.path(), "llama-tiny", "model.layers.0.mlp.down_proj.weight", 5);
  const fs::path gpt2 = poisoned_copy(tmp.path(), "gpt2-tiny", "transformer.h.1.mlp.c_fc.weight", 7);
  for (const fs::path& dir : {llama, gpt2})
    for (const forge::Device& d : test_devices()) {
      const auto m = forge::load_model(dir, d);
      for (bool cache : {true, false})
        for (float temperature : {0.0f, 0.9f}) {
          const std::string e = generate_error(*m, {1, 2, 3}, cache, temperature, 6);
          EXPECT_NE(e.find("the logits of generated token 0 are not finite"), std::string::npos)
              << dir.filename() << " " << d.name() << " cache " << cache << " t " << temperature << ": " << e;
        }
    }
}

// A NaN in one row of an untied embedding: generation is exact until that
// token is fed back, and the step it feeds is the one named. mistral-tiny
// greedily continues 1, 2, 3 with 520, 219, 520, 219, 360, ...
TEST(NonFiniteLogits, PoisonedEmbeddingRowFailsAtTheStepThatReadsIt) {
  TempDir tmp;
  const fs::path clean = kData / "mistral-tiny";
  const fs::path dir = poisoned_copy(tmp.path(), "mistral-tiny", "model.embed_tokens.weight", 360 * 128 + 3);
  ASSERT_EQ(json::parse(read_all(clean / "config.json")).at("hidden_size"), 128);
  for (const forge::Device& d : test_devices()) {
    forge::GenerateOptions o;
    o.max_new_tokens = 8;
    const std::vector<uint32_t> ids = forge::generate(*forge::load_model(clean, d), {1, 2, 3}, o);
    ASSERT_EQ(std::vector<uint32_t>(ids.begin(), ids.begin() + 5), (std::vector<uint32_t>{520, 219, 520, 219, 360}))
        << d.name();
    const auto m = forge::load_model(dir, d);
    for (bool cache : {true, false}) {
      const std::string e = generate_error(*m, {1, 2, 3}, cache, 0.0f, 8);
      EXPECT_NE(e.find("the logits of generated token 5 are not finite"), std::string::npos)
          << d.name() << " cache " << cache << ": " << e;
      // Four tokens stop before the poisoned one is fed back: no error.
      EXPECT_EQ(generate_error(*m, {1, 2, 3}, cache, 0.0f, 5), "") << d.name() << " cache " << cache;
    }
  }
}

// forge serve: the request fails with a 500 naming the cause; the server
// stays up and a request to the same model after it gets the same answer.
TEST(NonFiniteLogits, ServeAnswers500AndKeepsServing) {
  TempDir tmp;
  const fs::path dir = poisoned_copy(tmp.path(), "gpt2-tiny", "transformer.h.0.attn.c_proj.weight", 1);
  forge::testing::ServeProcess s(dir, tmp.path(), {"--max-batch", "2"});
  ASSERT_TRUE(s.up()) << s.output();
  for (int i = 0; i < 2; ++i) {
    auto c = s.client();
    const auto r = c->Post("/v1/completions", json{{"prompt", {1, 2, 3}}, {"max_tokens", 4}}.dump(),
                           "application/json");
    ASSERT_TRUE(r) << "request " << i;
    EXPECT_EQ(r->status, 500) << r->body;
    EXPECT_NE(r->body.find("not finite"), std::string::npos) << r->body;
  }
}

// eval --input and --text-file: exit 1 naming the cause, no --output file.
TEST(NonFiniteLogits, EvalRefusesALossThatIsNotFinite) {
  TempDir tmp;
  const fs::path llama = poisoned_copy(tmp.path(), "llama-tiny", "model.layers.1.self_attn.o_proj.weight", 9);
  const fs::path out = tmp / "out.safetensors";
  const auto r = forge::testing::run_cli({"eval", "-m", llama.string(), "--input",
                                          (kData / "llama-tiny" / "reference.safetensors").string(), "--output",
                                          out.string(), "--device", "cpu", "--json"},
                                         tmp.path());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("[eval] the loss is NaN: the model's logits hold values that are not finite"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out));
  // A byte-level GPT-2 (its tokenizer in the folder) for a text.
  const fs::path gpt2 = tmp / "bytes";
  ASSERT_EQ(forge::testing::run_cli({"init", "--preset", "tiny", "--tokenizer", "bytes", "--out", gpt2.string()},
                                    tmp.path())
                .code,
            0);
  std::ofstream(tmp / "text.txt") << "forge evaluates this text with a model whose weights hold a NaN.";
  const std::vector<std::string> text_eval = {"eval", "-m", gpt2.string(), "--text-file",
                                              (tmp / "text.txt").string(), "--device", "cpu"};
  ASSERT_EQ(forge::testing::run_cli(text_eval, tmp.path()).code, 0);
  poison(gpt2, "mlp.c_proj.weight", 4);
  const auto t = forge::testing::run_cli(text_eval, tmp.path());
  EXPECT_EQ(t.code, 1) << t.out;
  EXPECT_NE(t.out.find("the loss is NaN"), std::string::npos) << t.out;
}

// Training from such weights stops at its first step naming them, not the
// learning rate (no update has happened yet).
TEST(NonFiniteLogits, TrainingNamesTheLoadedWeightsAtTheFirstStep) {
  TempDir tmp;
  const fs::path llama = poisoned_copy(tmp.path(), "llama-tiny", "model.layers.0.self_attn.q_proj.weight", 2);
  const auto r = forge::testing::run_cli({"train", "-m", llama.string(), "--fixed-batch",
                                          (kData / "llama-tiny" / "reference.safetensors").string(), "--steps", "3",
                                          "--device", "cpu", "--out", (tmp / "tuned").string()},
                                         tmp.path());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is not finite before any update: the weights as loaded hold values that are not finite"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("--lr"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(tmp / "tuned"));
}
