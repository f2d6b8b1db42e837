// Checkpoints: single files, sharded directories through the index, and broken indexes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>

#include "forge/error.h"
#include "forge/model_config.h"
#include "forge/safetensors.h"
#include "test_safetensors_util.h"
#include "unit/this_build.h"

using namespace forge;
using forge::testing::TempDir;

namespace {

const std::string kLlama = std::string(forge::testing::test_data_dir()) + "/llama-tiny";

// Splits llama-tiny into two shards plus an index in `dir`; returns the weight map.
nlohmann::json shard_llama(const TempDir& dir) {
  SafetensorsFile src = SafetensorsFile::open(kLlama + "/model.safetensors");
  std::vector<TensorToWrite> first, second;
  nlohmann::json map = nlohmann::json::object();
  for (const TensorInfo& t : src.tensors()) {
    bool in_first = t.name.find("layers.1.") == std::string::npos;
    (in_first ? first : second).push_back({t.name, t.dtype, t.shape, src.view(t).bytes});
    map[t.name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  write_safetensors(dir / "model-00001-of-00002.safetensors", first, {{"format", "pt"}});
  write_safetensors(dir / "model-00002-of-00002.safetensors", second, {{"format", "pt"}});
  forge::testing::write_file(dir / "model.safetensors.index.json",
                             nlohmann::json({{"metadata", {{"total_size", 12345}}}, {"weight_map", map}}).dump());
  std::filesystem::copy_file(kLlama + "/config.json", dir / "config.json");
  return map;
}

}  // namespace

TEST(SafetensorsCheckpoint, SingleFileDirectory) {
  Checkpoint ck = Checkpoint::open(kLlama);
  EXPECT_EQ(ck.shards().size(), 1u);
  EXPECT_EQ(ck.names().size(), 20u);
  EXPECT_TRUE(std::is_sorted(ck.names().begin(), ck.names().end()));
  EXPECT_EQ(ck.info("model.norm.weight").shape, (Shape{128}));
  EXPECT_EQ(ck.metadata().at("format"), "pt");
  try {
    ck.get("lm_head.weight");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_EQ(std::string(e.what()), "[checkpoint] no tensor 'lm_head.weight' in " + kLlama);
  }
}

TEST(SafetensorsCheckpoint, ShardsThroughIndexMatchSingleFile) {
  TempDir dir;
  shard_llama(dir);
  Checkpoint sharded = Checkpoint::open(dir.path());
  Checkpoint single = Checkpoint::open(kLlama);
  EXPECT_EQ(sharded.shards().size(), 2u);
  EXPECT_EQ(sharded.metadata().at("total_size"), "12345");
  ASSERT_EQ(sharded.names(), single.names());
  for (const std::string& n : single.names()) {
    auto a = sharded.get(n).bytes, b = single.get(n).bytes;
    ASSERT_EQ(a.size(), b.size()) << n;
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size()), 0) << n;
  }
  // The index file itself opens the same way.
  EXPECT_EQ(Checkpoint::open(dir / "model.safetensors.index.json").names(), single.names());
  // And the layout check runs across shards.
  WeightLayout layout = check_weights(load_config(dir.path()), sharded.tensors(), dir.path().string());
  EXPECT_EQ(layout.arch, Arch::Llama);
}

TEST(SafetensorsCheckpoint, IndexedNameMissingFromShardIsAnError) {
  TempDir dir;
  nlohmann::json map = shard_llama(dir);
  map["model.layers.7.mlp.up_proj.weight"] = "model-00002-of-00002.safetensors";
  forge::testing::write_file(dir / "model.safetensors.index.json", nlohmann::json({{"weight_map", map}}).dump());
  try {
    Checkpoint::open(dir.path());
    FAIL() << "missing tensor accepted";
  } catch (const IoError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("tensor 'model.layers.7.mlp.up_proj.weight' is listed in"), std::string::npos) << msg;
    EXPECT_NE(msg.find("model-00002-of-00002.safetensors"), std::string::npos) << msg;
  }
}

TEST(SafetensorsCheckpoint, BrokenIndexesAndDirectories) {
  TempDir dir;
  nlohmann::json map = shard_llama(dir);
  auto index = dir / "model.safetensors.index.json";
  auto refused = [&](const std::string& text, const std::string& problem) {
    forge::testing::write_file(index, text);
    try {
      Checkpoint::open(dir.path());
      ADD_FAILURE() << "accepted: " << text.substr(0, 80);
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(problem), std::string::npos) << e.what();
    }
  };
  refused("{\"metadata\": {}}", "has no \"weight_map\" object");
  refused("{\"weight_map\": {\"model.norm.weight\": 3}}", "is 3, not a file name");
  refused("{\"weight_map\": {\"model.norm.weight\": \"../model.safetensors\"}}", "not a file beside the index");
  refused("{\"weight_map\": {\"model.norm.weight\": \"absent.safetensors\"}}", "cannot open");
  refused("{\"weight_map\": {", "invalid JSON");

  TempDir empty;
  EXPECT_THROW(Checkpoint::open(empty.path()), IoError);
}
