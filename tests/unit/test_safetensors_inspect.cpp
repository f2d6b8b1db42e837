// forge inspect on every fixture checkpoint, as text and as JSON.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>

#include "test_safetensors_util.h"
#include "unit/this_build.h"

namespace {

const std::string kData = forge::testing::test_data_dir();

// Runs the CLI; returns stdout and sets `status` to the exit code.
std::string run_cli(const std::string& args, int& status) {
  std::string cmd = std::string(forge::testing::cli_path()) + " " + args + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("popen failed: " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return out;
}

nlohmann::json inspect_json(const std::string& path) {
  int status = 0;
  std::string out = run_cli("inspect --json '" + path + "'", status);
  EXPECT_EQ(status, 0) << out;
  return nlohmann::json::parse(out);
}

}  // namespace

TEST(SafetensorsInspect, EveryFixtureDirectory) {
  struct Case {
    const char* dir;
    const char* arch;
    size_t tensors;
    bool quantized;
  };
  for (const Case& c : {Case{"gpt2-tiny", "gpt2", 28, false}, Case{"gpt2-vocab50257", "gpt2", 16, false},
                        Case{"llama-tiny", "llama", 20, false}, Case{"llama-tiny-mlx8", "llama", 50, true}}) {
    SCOPED_TRACE(c.dir);
    nlohmann::json r = inspect_json(kData + "/" + c.dir);
    EXPECT_EQ(r["architecture"], c.arch);
    EXPECT_EQ(r["architecture_from"], "config.json");
    EXPECT_EQ(r["tensors"].size(), c.tensors);
    EXPECT_EQ(r["quantized"], c.quantized);
    EXPECT_EQ(r["config"]["model_type"], c.arch);
    EXPECT_GT(r["parameters"].get<int64_t>(), 0);
    EXPECT_TRUE(r["metadata"].contains("format"));
  }
  // Same model, two storage formats: same parameter count.
  EXPECT_EQ(inspect_json(kData + "/llama-tiny")["parameters"], inspect_json(kData + "/llama-tiny-mlx8")["parameters"]);
}

TEST(SafetensorsInspect, SingleFileAndTextOutput) {
  nlohmann::json r = inspect_json(kData + "/gpt2-tiny/model.safetensors");
  EXPECT_EQ(r["architecture"], "gpt2");
  EXPECT_EQ(r["architecture_from"], "tensor names");
  EXPECT_FALSE(r.contains("config"));
  const nlohmann::json& first = r["tensors"][0];
  EXPECT_EQ(first["name"], "transformer.h.0.attn.c_attn.bias");
  EXPECT_EQ(first["dtype"], "F32");
  EXPECT_EQ(first["shape"], nlohmann::json({96}));
  EXPECT_EQ(first["bytes"], 384);

  int status = 0;
  std::string text = run_cli("inspect '" + kData + "/llama-tiny-mlx8'", status);
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("architecture: llama (from config.json)"), std::string::npos) << text;
  EXPECT_NE(text.find("model.layers.0.self_attn.q_proj.weight"), std::string::npos);
  EXPECT_NE(text.find("quantized"), std::string::npos);

  std::string err = run_cli("inspect '" + kData + "/no-such-model'", status);
  EXPECT_EQ(status, 1);
  EXPECT_NE(err.find("[checkpoint] " + kData + "/no-such-model does not exist"), std::string::npos) << err;
}
