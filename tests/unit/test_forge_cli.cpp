// The forge command's conventions, run as a user would: help, exit codes and
// the "forge: error:" line, readable ranges, the model-shape options of train,
// errors that say what a wrong path is, the byte tokenizer saved with a model,
// inspect naming a file of tensors that is not a model, and a failed start
// that leaves nothing behind.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "unit/cli_process.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
using forge::testing::last_line;
using forge::testing::lines_of;
using forge::testing::run_cli;
using forge::testing::ScratchDir;

const std::string kTiny = std::string(forge::testing::test_data_dir()) + "/gpt2-tiny";

// One line, "forge: error: ..." holding `what`.
void expect_one_error_line(const forge::testing::CliRun& r, const std::string& what) {
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("forge: error: ", 0), 0u) << r.out;
  EXPECT_NE(lines[0].find(what), std::string::npos) << r.out;
}

// A small training run on bytes: tiny shapes, CPU.
std::vector<std::string> tiny_run(const fs::path& data, const fs::path& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"train",       "--data", data.string(), "--preset", "tiny",   "--n-layer", "1",
                                "--n-embd",    "32",     "--n-head",    "2",        "--tokenizer", "bytes",
                                "--steps",     "2",      "--batch",     "2",        "--seq",    "16",  "--eval-batches",
                                "1",           "--device", "cpu",       "--out",    out.string()};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST(ForgeCli, HelpWithoutArgumentsAndHelpCommand) {
  ScratchDir dir("cli_help");
  auto r = run_cli({}, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("train"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forge help COMMAND"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 usage error"), std::string::npos) << r.out;

  r = run_cli({"--version"}, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("forge ", 0), 0u) << r.out;

  r = run_cli({"help"}, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("inspect"), std::string::npos) << r.out;

  // Every default is shown.
  r = run_cli({"help", "train"}, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* opt : {"--resume", "--overwrite", "--preset", "--n-layer", "--context", "-m,--model"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt << "\n" << r.out;
  for (const char* def : {"=100 ", "=1234 ", "=0.0006", "=auto", "=128, or the context if shorter"})
    EXPECT_NE(r.out.find(def), std::string::npos) << def << "\n" << r.out;

  r = run_cli({"help", "bench", "train"}, dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--shapes"), std::string::npos) << r.out;

  r = run_cli({"help", "nosuch"}, dir.path);
  EXPECT_EQ(r.code, 2);
  expect_one_error_line(r, "unknown command 'nosuch'");
}

TEST(ForgeCli, UsageErrorsExitTwoWithOneLine) {
  ScratchDir dir("cli_usage");
  const std::string out = (dir.path / "run").string();
  struct Case {
    std::vector<std::string> args;
    const char* what;
  };
  const Case cases[] = {
      {{"nosuch"}, "unknown command 'nosuch'"},
      {{"bench", "nosuch"}, "unknown benchmark 'nosuch'"},
      {{"bench"}, "subcommand"},
      {{"train", "--no-such-flag"}, "--no-such-flag"},
      {{"train", "--steps", "abc"}, "--steps must be an integer, got 'abc'"},
      {{"train", "--steps", "-5"}, "--steps must be >= 1, got -5"},
      {{"bench", "train", "--lora-rank", "0"}, "--lora-rank must be >= 1, got 0"},
      {{"bench", "llm", "--rows", "8,0"}, "--rows must be >= 1, got 0"},
      {{"bench", "gpt2", "--rows", "0"}, "--rows must be >= 1, got 0"},
      {{"train", "--lr", "x"}, "--lr must be a number, got 'x'"},
      {{"train", "--dropout", "2"}, "--dropout must be in [0, 0.99], got 2"},
      {{"train", "--preset", "huge"}, "huge"},
      {{"init", "--out", out}, "--arch gpt2 needs --preset"},
      {{"init", "--preset", "tiny", "--config", kTiny + "/config.json", "--out", out}, "exclude each other"},
      {{"init", "--config", kTiny + "/config.json", "--out", out}, "names a GPT-2"},
      {{"inspect"}, "inspect needs a PATH or --model DIR"},
      {{"train", "--out", out, "--resume", "--overwrite"}, "--resume and --overwrite exclude each other"},
      {{"train", "--data", kTiny + "/config.json", "--out", out}, "pass --model DIR"},
      {{"train", "--data", kTiny + "/config.json", "--model", kTiny, "--preset", "tiny", "--out", out},
       "pass one or the other"},
      {{"train", "--fixed-batch", kTiny + "/reference.safetensors"}, "--fixed-batch needs --model"},
      {{"generate", "-m", kTiny, "--prompt-ids", " ", "--device", "cpu"}, "--prompt-ids holds no token ids"},
      {{"generate", "-m", kTiny, "--prompt-ids", "1,,2", "--device", "cpu"},
       "--prompt-ids has an empty item between commas in '1,,2'"},
      // An empty value (a script's unset variable) is neither absent nor zero.
      {{"generate", "-m", kTiny, "--prompt-ids", "", "--device", "cpu"},
       "--prompt-ids needs a value, got an empty string"},
      {{"generate", "-m", kTiny, "--prompt-ids", "1", "--temperature", ""},
       "--temperature needs a value, got an empty string"},
      {{"generate", "-m", kTiny, "--prompt-ids", "1", "--adapter", ""}, "--adapter needs a value, got an empty string"},
      {{"eval", "-m", kTiny, "--input", kTiny + "/reference.safetensors", "--output", ""},
       "--output needs a value, got an empty string"},
      {{"train", "--data", "", "--out", out}, "--data needs a value, got an empty string"},
      {{"generate", "-m", "", "--prompt-ids", "1"}, "-m needs a value, got an empty string"},
      {{"serve", "-m", kTiny, "--api-key", ""}, "--api-key needs a value, got an empty string"},
      {{"inspect", ""}, "error: path needs a value, got an empty string ("},
      {{"serve", "-m", kTiny, "--port", "99999"}, "--port must be in [0, 65535], got 99999"},
      {{"generate", "-m", kTiny, "--top-k", "x"}, "--top-k must be an integer, got 'x'"},
      {{"train", "--lora-alpha", "x"}, "--lora-alpha must be a number, got 'x'"},
      {{"generate", "-m", kTiny, "--seed", "-1"}, "--seed must be an integer in [0, 2^64), got '-1'"},
      {{"quantize", "-m", kTiny, "--bits", "3", "--out", out}, "--bits must be 2, 4 or 8, got 3"},
      {{"bench", "attention", "--seq", "0"}, "--seq must be >= 1, got 0"},
      {{"bench", "llm", "--dtype", "q3"}, "q3 not in {f32,bf16,q8,q4}"},
      {{"quantize", "-m", kTiny, "--group-size", "7", "--out", out}, "--group-size must be 32, 64 or 128, got 7"},
  };
  for (const Case& c : cases) {
    const auto r = run_cli(c.args, dir.path);
    SCOPED_TRACE(c.args.empty() ? "" : c.args.back());
    EXPECT_EQ(r.code, 2) << r.out;
    expect_one_error_line(r, c.what);
  }
  EXPECT_FALSE(fs::exists(out));
}

// Every command that takes a model folder spells it `-m, --model`.
TEST(ForgeCli, EveryModelOptionHasTheShortForm) {
  ScratchDir dir("cli_model_flag");
  const std::vector<std::vector<std::string>> commands = {
      {"chat"},     {"chat-template"}, {"eval"},  {"generate"},  {"merge"},          {"quantize"},
      {"serve"},    {"tokenize"},      {"detokenize"}, {"train"}, {"bench", "llm"}, {"bench", "tokenizer"},
      {"inspect"}};
  for (const auto& c : commands) {
    std::vector<std::string> args = c;
    args.push_back("--help");
    const auto r = run_cli(args, dir.path);
    SCOPED_TRACE(c.back());
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("-m,--model"), std::string::npos) << r.out;
  }
  // And it works: the tokenizer commands with -m, as with --model.
  const std::string tok = std::string(forge::testing::test_data_dir()) + "/tokenizer-gpt2";
  const auto a = run_cli({"tokenize", "-m", tok, "--text", "Hello world", "--json"}, dir.path);
  const auto b = run_cli({"tokenize", "--model", tok, "--text", "Hello world", "--json"}, dir.path);
  EXPECT_EQ(a.code, 0) << a.out;
  EXPECT_NE(a.out.find("\"ids\""), std::string::npos) << a.out;
  EXPECT_EQ(a.out, b.out);
  const auto d = run_cli({"detokenize", "-m", tok, "--ids", "15496,995"}, dir.path);
  EXPECT_EQ(d.code, 0) << d.out;
  EXPECT_NE(d.out.find("Hello world"), std::string::npos) << d.out;
  // inspect takes its folder as PATH or as -m, the same report either way; not both, not neither.
  const std::string llama = std::string(forge::testing::test_data_dir()) + "/llama-tiny";
  const auto p = run_cli({"inspect", llama, "--json"}, dir.path);
  const auto m = run_cli({"inspect", "-m", llama, "--json"}, dir.path);
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("LlamaForCausalLM"), std::string::npos) << p.out;
  EXPECT_EQ(p.out, m.out);
  const auto both = run_cli({"inspect", llama, "--model", llama}, dir.path);
  EXPECT_EQ(both.code, 2) << both.out;
  const auto neither = run_cli({"inspect"}, dir.path);
  EXPECT_EQ(neither.code, 2) << neither.out;
  EXPECT_NE(neither.out.find("PATH or --model"), std::string::npos) << neither.out;
}

TEST(ForgeCli, RuntimeErrorsExitOne) {
  ScratchDir dir("cli_runtime");
  auto r = run_cli({"inspect", (dir.path / "missing.safetensors").string()}, dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "does not exist");
  r = run_cli({"train", "--data", (dir.path / "missing.txt").string(), "--preset", "tiny", "--tokenizer", "bytes",
               "--out", (dir.path / "run").string(), "--device", "cpu"},
              dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "--data '" + (dir.path / "missing.txt").string() + "' does not exist");
  EXPECT_FALSE(fs::exists(dir.path / "run"));  // a failed start leaves nothing behind
  // A shape no machine holds is refused at once, before any folder is made.
  {
    std::ofstream f(dir.path / "huge.json");
    f << R"({"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 65536,
             "num_attention_heads": 64, "num_hidden_layers": 1000, "intermediate_size": 1000000,
             "vocab_size": 1000})";
  }
  r = run_cli({"init", "--config", (dir.path / "huge.json").string(), "--out", (dir.path / "huge").string()}, dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "GB of memory to build");
  EXPECT_FALSE(fs::exists(dir.path / "huge"));
}

TEST(ForgeCli, ModelShapeOptionsAndSeqPastTheContext) {
  ScratchDir dir("cli_shape");
  forge::testing::write_sample_text(dir.path / "t.txt", 400);
  const fs::path out = dir.path / "run";
  auto r = run_cli(tiny_run(dir.path / "t.txt", out, {"--context", "32"}), dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream f(out / "checkpoint" / "config.json");
  const auto config = nlohmann::json::parse(f);
  EXPECT_EQ(config["n_layer"], 1);
  EXPECT_EQ(config["n_embd"], 32);
  EXPECT_EQ(config["n_head"], 2);
  EXPECT_EQ(config["n_positions"], 32);
  EXPECT_EQ(config["vocab_size"], 257);  // bytes + <|endoftext|>

  const fs::path out2 = dir.path / "run2";
  r = run_cli(tiny_run(dir.path / "t.txt", out2, {"--context", "32", "--seq", "64"}), dir.path);
  EXPECT_EQ(r.code, 2);
  expect_one_error_line(r, "--seq 64 is longer than the model's context of 32 positions");
  r = run_cli(tiny_run(dir.path / "t.txt", out2, {"--n-head", "3"}), dir.path);
  EXPECT_EQ(r.code, 2);
  expect_one_error_line(r, "--n-embd 32 must be a multiple of --n-head 3");
  r = run_cli({"train", "--data", (dir.path / "t.txt").string(), "--model", kTiny, "--tokenizer", "bytes", "--seq",
               "1000", "--device", "cpu", "--out", out2.string()},
              dir.path);
  EXPECT_EQ(r.code, 2);
  expect_one_error_line(r, "--seq 1000 is longer than the model's context");
  EXPECT_FALSE(fs::exists(out2));
}

TEST(ForgeCli, WrongPathsSayWhatTheyAre) {
  ScratchDir dir("cli_paths");
  forge::testing::write_sample_text(dir.path / "t.txt", 400);
  const fs::path run = dir.path / "run";
  ASSERT_EQ(run_cli(tiny_run(dir.path / "t.txt", run), dir.path).code, 0);

  // A training run given as --model: its checkpoint/ is suggested.
  auto r = run_cli({"train", "--data", (dir.path / "t.txt").string(), "-m", run.string(), "--out",
                    (dir.path / "r2").string(), "--device", "cpu"},
                   dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "is a training run; its model is in " + (run / "checkpoint").string());
  // A file where a folder is wanted.
  r = run_cli({"train", "--data", (dir.path / "t.txt").string(), "--model", kTiny + "/model.safetensors", "--out",
               (dir.path / "r2").string(), "--device", "cpu"},
              dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "is a file; it takes a model folder (config.json + safetensors) (the model is its folder");
  r = run_cli({"inspect", run.string()}, dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "its model is in " + (run / "checkpoint").string());
  // --data DIR reads the folder's text files; a folder without any says so.
  fs::create_directories(dir.path / "texts" / "more");
  fs::copy_file(dir.path / "t.txt", dir.path / "texts" / "more" / "a.txt");
  r = run_cli(tiny_run(dir.path / "texts", dir.path / "r3"), dir.path);
  EXPECT_EQ(r.code, 0) << r.out;
  fs::create_directories(dir.path / "empty");
  r = run_cli(tiny_run(dir.path / "empty", dir.path / "r4"), dir.path);
  EXPECT_EQ(r.code, 1);
  expect_one_error_line(r, "is a directory without text files");
  EXPECT_FALSE(fs::exists(dir.path / "r2"));
  EXPECT_FALSE(fs::exists(dir.path / "r4"));
}

// A run whose loss stops being finite ends with an error at that step and
// leaves the last good checkpoint as it was (no NaN weights saved over it).
TEST(ForgeCli, DivergedTrainingStopsAndKeepsTheLastCheckpoint) {
  ScratchDir dir("cli_diverge");
  forge::testing::write_sample_text(dir.path / "t.txt", 400);
  const fs::path run = dir.path / "run";
  auto r = run_cli(tiny_run(dir.path / "t.txt", run, {"--steps", "6", "--lr", "1e30", "--save-every", "1"}), dir.path);
  EXPECT_EQ(r.code, 1) << r.out;
  const auto lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("training diverged at step"), std::string::npos) << r.out;
  EXPECT_NE(lines.back().find("keeps step"), std::string::npos) << r.out;
  std::ifstream f(run / "checkpoint" / "train.json");
  ASSERT_TRUE(f) << r.out;
  const int saved = nlohmann::json::parse(f)["step"].get<int>();
  EXPECT_GE(saved, 1);
  EXPECT_NE(lines.back().find("keeps step " + std::to_string(saved)), std::string::npos) << r.out;
  // The fixed-batch trainer stops the same way.
  r = run_cli({"train", "-m", kTiny, "--fixed-batch", kTiny + "/reference.safetensors", "--steps", "4", "--lr", "1e30",
               "--device", "cpu", "--json"},
              dir.path);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("training diverged at step"), std::string::npos) << r.out;
}

TEST(ForgeCli, ByteTokenizerIsSavedWithTheModel) {
  ScratchDir dir("cli_bytes");
  forge::testing::write_sample_text(dir.path / "t.txt", 400);
  const fs::path run = dir.path / "run";
  ASSERT_EQ(run_cli(tiny_run(dir.path / "t.txt", run), dir.path).code, 0);
  const fs::path ckpt = run / "checkpoint";
  ASSERT_TRUE(fs::exists(ckpt / "tokenizer.json"));
  // forge loads it: byte b is id b, <|endoftext|> is 256.
  auto r = run_cli({"tokenize", "--model", ckpt.string(), "--text", "hi é<|endoftext|>", "--json"}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(last_line(r.out))["ids"],
            nlohmann::json({104, 105, 32, 0xC3, 0xA9, 256}));
  // init --tokenizer bytes gives a model the same tokenizer and vocab.
  r = run_cli({"init", "--preset", "tiny", "--tokenizer", "bytes", "--out", (dir.path / "init").string()}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(forge::testing::read_bytes(dir.path / "init" / "tokenizer.json"),
            forge::testing::read_bytes(ckpt / "tokenizer.json"));
  // init --tokenizer takes a folder too.
  r = run_cli({"init", "--preset", "tiny", "--tokenizer", ckpt.string(), "--out", (dir.path / "init2").string()},
              dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir.path / "init2" / "tokenizer.json"));
}

// init --config: a Llama-family model of that shape with random weights, the
// same for the same seed, that trains from its first step (a random model's
// first loss is near ln(vocab): its logits start near zero).
TEST(ForgeCli, InitFromAConfigWritesARandomModelThatTrains) {
  ScratchDir dir("cli_init_config");
  const std::string llama = std::string(forge::testing::test_data_dir()) + "/llama3-tiny";
  const fs::path a = dir.path / "a", b = dir.path / "b", c = dir.path / "c";
  for (const auto& [out, seed] : {std::pair{a, "3"}, std::pair{b, "3"}, std::pair{c, "4"}}) {
    const auto r = run_cli({"init", "--config", llama + "/config.json", "--seed", seed, "--out", out.string()}, dir.path);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  EXPECT_EQ(forge::testing::read_bytes(a / "config.json"), forge::testing::read_bytes(llama + "/config.json"));
  EXPECT_EQ(forge::testing::read_bytes(a / "model.safetensors"), forge::testing::read_bytes(b / "model.safetensors"));
  EXPECT_NE(forge::testing::read_bytes(a / "model.safetensors"), forge::testing::read_bytes(c / "model.safetensors"));
  std::set<std::string> files;  // nothing else, no temporary file left
  for (const auto& e : fs::directory_iterator(a)) files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"config.json", "model.safetensors"}));

  const auto r = run_cli({"train", "--model", a.string(), "--fixed-batch", llama + "/reference.safetensors", "--steps",
                          "3", "--lr", "1e-2", "--json", "--device", "cpu"},
                         dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto losses = nlohmann::json::parse(last_line(r.out))["losses"].get<std::vector<double>>();
  const auto config = nlohmann::json::parse(forge::testing::read_bytes(llama + "/config.json"));
  ASSERT_EQ(losses.size(), 3u);
  EXPECT_NEAR(losses[0], std::log(config["vocab_size"].get<double>()), 0.05);
  EXPECT_LT(losses[2], losses[0]);
}

TEST(ForgeCli, InspectNamesTensorsThatAreNoModel) {
  ScratchDir dir("cli_inspect");
  auto r = run_cli({"inspect", kTiny + "/reference.safetensors"}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("not a model"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("logits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" elements"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("parameters"), std::string::npos) << r.out;
  r = run_cli({"inspect", "--json", kTiny + "/reference.safetensors"}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "tensors");
  EXPECT_FALSE(j.contains("parameters"));
  EXPECT_GT(j["elements"].get<int64_t>(), 0);

  // A model file is still a model, counted in parameters.
  r = run_cli({"inspect", "--json", kTiny + "/model.safetensors"}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["kind"], "model");

  // A checkpoint's optimizer state.
  forge::testing::write_sample_text(dir.path / "t.txt", 400);
  ASSERT_EQ(run_cli(tiny_run(dir.path / "t.txt", dir.path / "run"), dir.path).code, 0);
  r = run_cli({"inspect", (dir.path / "run/checkpoint/optimizer.safetensors").string()}, dir.path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("optimizer state"), std::string::npos) << r.out;
}
