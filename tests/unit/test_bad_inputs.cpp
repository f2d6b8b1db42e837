// Every bad input a clear error: one table of bad command lines (unknown
// flags, missing and wrong files, corrupted files of every kind forge reads,
// bad values, garbage in the environment) and one of bad library calls.
// A CLI row must exit with 1 or 2 (never a signal), within a time limit,
// with exactly one line on stderr ("forge: error: ...") that holds the row's
// keyword, and leave no output file behind. A library row must throw a
// forge::Error subclass whose one-line message holds the keyword.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cli_process.h"
#include "forge/chat_template.h"
#include "forge/error.h"
#include "forge/generate.h"
#include "forge/gpt2.h"
#include "forge/model.h"
#include "forge/model_config.h"
#include "forge/ops.h"
#include "forge/tokenizer.h"
#include "train_data.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
using forge::testing::CliOptions;
using forge::testing::CliProcess;
using forge::testing::lines_of;
using forge::testing::read_bytes;
using forge::testing::ScratchDir;

const fs::path kData = forge::testing::test_data_dir();

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// A one-tensor safetensors file.
std::string safetensors(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                        const std::string& data) {
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "," : "") + std::to_string(shape[i]);
  std::string header = "{\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[" + dims +
                       "],\"data_offsets\":[0," + std::to_string(data.size()) + "]}}";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string i64s(const std::vector<int64_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8);
}

// A copy of the gpt2-tiny fixture with one file replaced (or removed: "").
fs::path model_with(const fs::path& root, const std::string& name, const std::string& file,
                    const std::optional<std::string>& contents) {
  const fs::path dir = root / name;
  fs::create_directories(dir);
  for (const char* f : {"config.json", "model.safetensors"}) fs::copy_file(kData / "gpt2-tiny" / f, dir / f);
  if (contents) write_file(dir / file, *contents);
  else fs::remove(dir / file);
  return dir;
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

struct CliCase {
  std::string name;
  std::vector<std::string> args;
  std::string keyword;                                   // in the one stderr line
  std::vector<std::pair<std::string, std::string>> env;  // set for the run
  fs::path output;                                       // must not exist afterwards
};

}  // namespace

TEST(BadInput, CliTableEachAClearOneLineError) {
  ScratchDir scratch("bad_input");
  const fs::path s = scratch.path;
  const std::string gpt2 = (kData / "gpt2-tiny").string();
  const std::string ref = (kData / "gpt2-tiny" / "reference.safetensors").string();
  const std::string tok_gpt2 = (kData / "tokenizer-gpt2" / "tokenizer.json").string();
  const std::string config_text = read_bytes(kData / "gpt2-tiny" / "config.json");
  const std::string model_bytes = read_bytes(kData / "gpt2-tiny" / "model.safetensors");
  const std::string tok_text = read_bytes(kData / "tokenizer-gpt2" / "tokenizer.json");

  // Input files, each wrong in one way.
  write_file(s / "ids_f32.st", safetensors("input_ids", "F32", {1, 3}, std::string(12, '\0')));
  write_file(s / "ids_rank1.st", safetensors("input_ids", "I64", {3}, i64s({1, 2, 3})));
  write_file(s / "ids_empty.st", safetensors("input_ids", "I64", {1, 0}, ""));
  write_file(s / "ids_big.st", safetensors("input_ids", "I64", {1, 2}, i64s({1, 5000})));
  write_file(s / "ids_neg.st", safetensors("input_ids", "I64", {1, 2}, i64s({1, -3})));
  write_file(s / "ids_long.st", safetensors("input_ids", "I64", {1, 80}, i64s(std::vector<int64_t>(80, 1))));
  write_file(s / "ids_wrong_name.st", safetensors("tokens", "I64", {1, 2}, i64s({1, 2})));
  write_file(s / "zero_bytes", "");
  write_file(s / "bad_utf8.txt", "caf\xC3(\xFF");
  write_file(s / "empty.txt", "");
  write_file(s / "prompt_empty.txt", "");
  fs::create_directories(s / "a_folder");
  write_file(s / "tokenizer_truncated.json", tok_text.substr(0, tok_text.size() / 3));
  write_file(s / "tokenizer_vocab_list.json", "{\"model\": {\"type\": \"BPE\", \"vocab\": [1, 2], \"merges\": []}}");
  write_file(s / "tokenizer_huge_id.json",
             "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": []}, \"added_tokens\": "
             "[{\"id\": 4294967295, \"content\": \"<x>\", \"special\": true}]}");
  write_file(s / "tokenizer_unigram.json", "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}");
  write_file(s / "template_bad.jinja", "{% for m in messages %}{{ m.content }");
  write_file(s / "template_ok.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}");
  write_file(s / "messages.json", "[{\"role\": \"user\", \"content\": \"hi\"}]");
  write_file(s / "messages_truncated.json", "[{\"role\": \"user\", \"con");
  write_file(s / "messages_object.json", "{\"role\": \"user\", \"content\": \"hi\"}");

  // Model folders, each wrong in one way.
  const auto model = [&](const std::string& name, const std::string& file, std::optional<std::string> contents) {
    return model_with(s, name, file, contents).string();
  };
  const std::string m_trunc_weights = model("m_trunc_weights", "model.safetensors", model_bytes.substr(0, 5000));
  std::string corrupt = model_bytes;
  corrupt[12] = '\x01';  // inside the JSON header
  const std::string m_corrupt_weights = model("m_corrupt_weights", "model.safetensors", corrupt);
  const std::string m_wrong_weights =
      model("m_wrong_weights", "model.safetensors", read_bytes(kData / "llama-tiny" / "model.safetensors"));
  const std::string m_no_weights = model("m_no_weights", "model.safetensors", std::nullopt);
  const std::string m_no_config = model("m_no_config", "config.json", std::nullopt);
  const std::string m_trunc_config = model("m_trunc_config", "config.json", config_text.substr(0, 200));
  const std::string m_zero_heads =
      model("m_zero_heads", "config.json", replaced(config_text, "\"n_head\": 2", "\"n_head\": 0"));
  const std::string m_odd_heads =
      model("m_odd_heads", "config.json", replaced(config_text, "\"n_head\": 2", "\"n_head\": 3"));
  const std::string m_zero_vocab =
      model("m_zero_vocab", "config.json", replaced(config_text, "\"vocab_size\": 1000", "\"vocab_size\": 0"));
  const std::string m_str_layers =
      model("m_str_layers", "config.json", replaced(config_text, "\"n_layer\": 2", "\"n_layer\": \"two\""));
  const std::string m_bad_tok = model("m_bad_tok", "tokenizer.json", tok_text.substr(0, 1000));
  // A small tokenizer whose ids fit the model's vocab of 1000.
  const std::string m_tok =
      model("m_tok", "tokenizer.json", read_bytes(fs::path(forge::testing::test_data_dir()).parent_path() / "fuzz" /
                                                  "corpus_tokenizer" / "components.json"));
  // Its special ids are the tokenizer's, not GPT-2's 50256.
  write_file(fs::path(m_tok) / "config.json",
             replaced(replaced(config_text, "\"bos_token_id\": 50256", "\"bos_token_id\": 1"),
                      "\"eos_token_id\": 50256", "\"eos_token_id\": 2"));
  const std::string m_bad_template = model("m_bad_template", "chat_template.jinja", "{% if %}");
  fs::copy_file(fs::path(m_tok) / "config.json", fs::path(m_bad_template) / "config.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(fs::path(m_tok) / "tokenizer.json", fs::path(m_bad_template) / "tokenizer.json");

  // LoRA adapter folders (the llama3-tiny fixture's), each wrong in one way.
  const std::string llama3 = (kData / "llama3-tiny").string();
  const auto adapter = [&](const std::string& name, const std::string& file, const std::string& contents) {
    const fs::path dir = s / name;
    fs::copy(kData / "llama3-tiny" / "adapter", dir);
    write_file(dir / file, contents);
    return dir.string();
  };
  const fs::path adapter_ok = kData / "llama3-tiny" / "adapter";
  const std::string a_float_rank = adapter("a_float_rank", "adapter_config.json",
                                           replaced(read_bytes(adapter_ok / "adapter_config.json"), "\"r\": 4", "\"r\": 4.5"));
  const std::string a_trunc = adapter("a_trunc", "adapter_model.safetensors",
                                      read_bytes(adapter_ok / "adapter_model.safetensors").substr(0, 30000));

  // A short training run whose files the resume rows corrupt.
  const fs::path run = s / "run";
  write_file(s / "train.txt", std::string(4000, 'a') + "the cat sat on the mat\n");
  {
    CliProcess p({"train", "--data", (s / "train.txt").string(), "--preset", "tiny", "--n-layer", "1", "--n-embd",
                  "32", "--n-head", "2", "--context", "32", "--tokenizer", "bytes", "--batch", "2", "--seq", "16",
                  "--eval-every", "0", "--eval-batches", "1", "--sample-tokens", "0", "--device", "cpu", "--steps",
                  "2", "--out", run.string()},
                 s / "train_log.txt");
    ASSERT_EQ(p.wait(), 0) << p.output();
  }
  const auto run_copy = [&](const std::string& name, const std::function<void(const fs::path&)>& damage) {
    const fs::path dir = s / name;
    fs::copy(run, dir, fs::copy_options::recursive);
    damage(dir);
    return dir.string();
  };
  const std::string r_opt = run_copy("r_opt", [](const fs::path& d) {
    std::string b = read_bytes(d / "checkpoint" / "optimizer.safetensors");
    for (size_t i = 8; i < 40 && i < b.size(); ++i) b[i] = '#';  // same size, garbage header
    write_file(d / "checkpoint" / "optimizer.safetensors", b);
  });
  const std::string r_tokens = run_copy("r_tokens", [](const fs::path& d) {
    const std::string b = read_bytes(d / "tokens.bin");
    write_file(d / "tokens.bin", b.substr(0, b.size() - 3));
  });
  const std::string r_train_json = run_copy("r_train_json", [](const fs::path& d) {
    write_file(d / "checkpoint" / "train.json", "{\"step\": \"two\"");
  });
  const std::string r_none = run_copy("r_none", [](const fs::path& d) { fs::remove_all(d / "checkpoint"); });

  const std::string out = (s / "out.safetensors").string();
  const std::string q_out = (s / "q_out").string();
  const std::vector<std::string> gen = {"generate", "--device", "cpu", "-n", "2"};
  auto g = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = gen;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  std::string ids70;
  for (int i = 0; i < 70; ++i) ids70 += (i ? "," : "") + std::to_string(i + 1);

  std::vector<CliCase> cases = {
      // Command lines.
      {"unknown command", {"nosuch"}, "unknown command 'nosuch'"},
      {"unknown flag", g({"-m", gpt2, "--prompt-ids", "1", "--bogus"}), "--bogus"},
      {"missing required flag", {"eval", "-m", gpt2, "--output", out}, "--input"},
      {"flag without its value", {"eval", "-m", gpt2, "--input", ref, "--output"}, "--output", {}, out},
      {"not a number", g({"-m", gpt2, "--prompt-ids", "1", "-n", "many"}), "many"},
      {"negative count", g({"-m", gpt2, "--prompt-ids", "1", "-n", "-5"}), "-5"},
      {"unknown device", {"eval", "-m", gpt2, "--input", ref, "--output", out, "--device", "tpu"}, "tpu", {}, out},
      // (Without the bench commands, preset asan, `bench` is the unknown command.)
      {"unknown benchmark", {"bench", "nosuch"}, forge::testing::bench_built() ? "nosuch" : "'bench'"},
      {"unknown preset", {"init", "--preset", "huge", "--out", q_out}, "huge", {}, q_out},
      // Missing files and folders where files are expected.
      {"missing model folder", g({"-m", (s / "nope").string(), "--prompt-ids", "1"}), "does not exist"},
      {"model folder without config", g({"-m", m_no_config, "--prompt-ids", "1"}), "config.json"},
      {"model folder without weights", g({"-m", m_no_weights, "--prompt-ids", "1"}), "safetensors"},
      {"missing input file", {"eval", "-m", gpt2, "--input", (s / "nope.st").string(), "--output", out, "--device", "cpu"},
       "nope.st", {}, out},
      {"folder as input file", {"eval", "-m", gpt2, "--input", (s / "a_folder").string(), "--output", out, "--device", "cpu"},
       "not a regular file", {}, out},
      {"empty input file", {"eval", "-m", gpt2, "--input", (s / "zero_bytes").string(), "--output", out, "--device", "cpu"},
       "too short", {}, out},
      {"output in a missing folder",
       {"eval", "-m", gpt2, "--input", ref, "--output", (s / "nope" / "o.st").string(), "--device", "cpu"},
       "nope' of '" + (s / "nope" / "o.st").string() + "' does not exist", {}, s / "nope" / "o.st"},
      {"folder as output file", {"eval", "-m", gpt2, "--input", ref, "--output", (s / "a_folder").string(), "--device", "cpu"},
       "a_folder' is a folder; give a file name"},
      {"output under a file",
       {"eval", "-m", gpt2, "--input", ref, "--output", (s / "zero_bytes" / "o.st").string(), "--device", "cpu"},
       "zero_bytes' is a file, not a folder"},
      {"missing prompt file", g({"-m", m_tok, "--prompt-file", (s / "nope.txt").string()}), "nope.txt"},
      // A device is read without end (/dev/zero used to hang, growing): refused by name.
      {"prompt file that is a device", g({"-m", m_tok, "--prompt-file", "/dev/zero"}),
       "'/dev/zero' is a device, not a file of text"},
      {"prompt file that is a folder", g({"-m", m_tok, "--prompt-file", (s / "a_folder").string()}), "is a folder"},
      {"text to tokenize from a device", {"tokenize", "--tokenizer", tok_gpt2, "--text-file", "/dev/zero"},
       "'/dev/zero' is a device"},
      {"text to evaluate from a device", {"eval", "-m", gpt2, "--tokenizer", tok_gpt2, "--text-file", "/dev/urandom"},
       "'/dev/urandom' is a device"},
      {"messages from a device", {"chat-template", "--template-file", (s / "template_ok.jinja").string(),
                                  "--messages-file", "/dev/zero"}, "'/dev/zero' is a device"},
      {"missing messages file", {"chat-template", "--template-file", (s / "template_ok.jinja").string(), "--messages-file",
                                 (s / "nope.json").string()}, "nope.json"},
      {"missing training data", {"train", "--data", (s / "nope.txt").string(), "--preset", "tiny", "--tokenizer", "bytes",
                                 "--out", (s / "r_missing").string(), "--device", "cpu"}, "nope.txt", {}, s / "r_missing"},
      {"resume without a checkpoint", {"train", "--out", r_none, "--resume"}, "checkpoint"},
      // eval input: dtypes, shapes, ids.
      {"input ids of dtype f32", {"eval", "-m", gpt2, "--input", (s / "ids_f32.st").string(), "--output", out, "--device", "cpu"},
       "I32 or I64", {}, out},
      {"input ids of rank 1", {"eval", "-m", gpt2, "--input", (s / "ids_rank1.st").string(), "--output", out, "--device", "cpu"},
       "[B, T]", {}, out},
      {"input ids of length 0", {"eval", "-m", gpt2, "--input", (s / "ids_empty.st").string(), "--output", out, "--device", "cpu"},
       "[B, T]", {}, out},
      {"input id past the vocab", {"eval", "-m", gpt2, "--input", (s / "ids_big.st").string(), "--output", out, "--device", "cpu"},
       "out of range", {}, out},
      {"negative input id", {"eval", "-m", gpt2, "--input", (s / "ids_neg.st").string(), "--output", out, "--device", "cpu"},
       "out of range", {}, out},
      {"input longer than the context", {"eval", "-m", gpt2, "--input", (s / "ids_long.st").string(), "--output", out,
                                         "--device", "cpu"}, "context length", {}, out},
      {"input without input_ids", {"eval", "-m", gpt2, "--input", (s / "ids_wrong_name.st").string(), "--output", out,
                                   "--device", "cpu"}, "input_ids", {}, out},
      // train --fixed-batch reads input ids as eval does.
      {"fixed batch of dtype f32", {"train", "-m", gpt2, "--fixed-batch", (s / "ids_f32.st").string(), "--steps", "1",
                                    "--device", "cpu"}, "I32 or I64"},
      {"fixed batch id past the vocab", {"train", "-m", gpt2, "--fixed-batch", (s / "ids_big.st").string(), "--steps",
                                         "1", "--device", "cpu"}, "out of range"},
      {"fixed batch of rank 1", {"train", "-m", gpt2, "--fixed-batch", (s / "ids_rank1.st").string(), "--steps", "1",
                                 "--device", "cpu"}, "[B, T]"},
      // generate: ids, context, sampling values, prompts.
      {"prompt id past the vocab", g({"-m", gpt2, "--prompt-ids", "1,5000"}), "out of range"},
      {"prompt longer than the context", g({"-m", gpt2, "--prompt-ids", ids70}), "context length"},
      {"malformed id list", g({"-m", gpt2, "--prompt-ids", "1,x"}), "'x'"},
      {"negative temperature", g({"-m", gpt2, "--prompt-ids", "1", "--temperature", "-1"}), "--temperature"},
      {"NaN temperature", g({"-m", gpt2, "--prompt-ids", "1", "--temperature", "nan"}), "--temperature"},
      {"top-p of 0", g({"-m", gpt2, "--prompt-ids", "1", "--top-p", "0"}), "--top-p"},
      {"top-p above 1", g({"-m", gpt2, "--prompt-ids", "1", "--top-p", "1.5"}), "--top-p"},
      {"NaN top-p", g({"-m", gpt2, "--prompt-ids", "1", "--top-p", "nan"}), "--top-p"},
      {"negative top-k", g({"-m", gpt2, "--prompt-ids", "1", "--top-k", "-2"}), "--top-k"},
      {"empty prompt text", g({"-m", m_tok, "--prompt", ""}), "empty"},
      {"empty prompt file", g({"-m", m_tok, "--prompt-file", (s / "prompt_empty.txt").string()}), "empty"},
      {"prompt of invalid UTF-8", g({"-m", m_tok, "--prompt-file", (s / "bad_utf8.txt").string()}), "UTF-8"},
      {"text prompt without a tokenizer", g({"-m", gpt2, "--prompt", "hi"}), "tokenizer"},
      // Truncated and corrupted files of every kind.
      {"truncated weights", g({"-m", m_trunc_weights, "--prompt-ids", "1"}), "model.safetensors"},
      {"corrupted weights header", g({"-m", m_corrupt_weights, "--prompt-ids", "1"}), "model.safetensors"},
      {"weights of another model", g({"-m", m_wrong_weights, "--prompt-ids", "1"}), "missing tensor"},
      {"truncated config", g({"-m", m_trunc_config, "--prompt-ids", "1"}), "config.json"},
      {"config with zero heads", g({"-m", m_zero_heads, "--prompt-ids", "1"}), "n_head"},
      {"config with heads not dividing the width", g({"-m", m_odd_heads, "--prompt-ids", "1"}), "n_head"},
      {"config with vocab size 0", g({"-m", m_zero_vocab, "--prompt-ids", "1"}), "vocab_size"},
      {"config with a string for a size", g({"-m", m_str_layers, "--prompt-ids", "1"}), "n_layer"},
      {"truncated tokenizer in the model folder", g({"-m", m_bad_tok, "--prompt", "hi"}), "tokenizer.json"},
      {"truncated tokenizer.json", {"tokenize", "--tokenizer", (s / "tokenizer_truncated.json").string(), "--text", "hi"},
       "not valid JSON"},
      {"tokenizer vocab of the wrong type", {"tokenize", "--tokenizer", (s / "tokenizer_vocab_list.json").string(), "--text",
                                             "hi"}, "model.vocab"},
      {"tokenizer id past 2^32", {"tokenize", "--tokenizer", (s / "tokenizer_huge_id.json").string(), "--text", "hi"},
       "largest supported token id"},
      {"tokenizer model not supported", {"tokenize", "--tokenizer", (s / "tokenizer_unigram.json").string(), "--text", "hi"},
       "Unigram"},
      {"tokenize invalid UTF-8", {"tokenize", "--tokenizer", tok_gpt2, "--text-file", (s / "bad_utf8.txt").string()}, "UTF-8"},
      {"detokenize an id past the vocab", {"detokenize", "--tokenizer", tok_gpt2, "--ids", "99999999"}, "out of range"},
      {"detokenize a malformed id", {"detokenize", "--tokenizer", tok_gpt2, "--ids", "12,abc"}, "abc"},
      {"chat template syntax error", {"chat-template", "--template-file", (s / "template_bad.jinja").string(),
                                      "--messages-file", (s / "messages.json").string()}, "chat-template"},
      {"model folder's chat template broken", g({"-m", m_bad_template, "--chat", "--prompt", "hi"}), "chat-template"},
      {"truncated messages file", {"chat-template", "--template-file", (s / "template_ok.jinja").string(), "--messages-file",
                                   (s / "messages_truncated.json").string()}, "messages_truncated.json"},
      {"messages not a list", {"chat-template", "--template-file", (s / "template_ok.jinja").string(), "--messages-file",
                               (s / "messages_object.json").string()}, "list"},
      {"empty training data", {"train", "--data", (s / "empty.txt").string(), "--preset", "tiny", "--tokenizer", "bytes",
                               "--out", (s / "r_empty").string(), "--device", "cpu"}, "too few", {}, s / "r_empty" / "checkpoint"},
      {"training data of invalid UTF-8 with a BPE tokenizer",
       {"train", "--data", (s / "bad_utf8.txt").string(), "--preset", "tiny", "--tokenizer", tok_gpt2, "--out",
        (s / "r_utf8").string(), "--device", "cpu"}, "UTF-8", {}, s / "r_utf8" / "checkpoint"},
      {"corrupted optimizer state", {"train", "--out", r_opt, "--resume"}, "optimizer.safetensors"},
      {"truncated token file", {"train", "--out", r_tokens, "--resume"}, "tokens.bin"},
      {"corrupted train.json", {"train", "--out", r_train_json, "--resume"}, "checkpoint"},
      {"adapter folder missing", g({"-m", llama3, "--prompt-ids", "1", "--adapter", (s / "nope").string()}),
       "not a folder"},
      {"adapter config with a float rank", g({"-m", llama3, "--prompt-ids", "1", "--adapter", a_float_rank}), "'r'"},
      {"truncated adapter weights", g({"-m", llama3, "--prompt-ids", "1", "--adapter", a_trunc}),
       "adapter_model.safetensors"},
      {"adapter on a GPT-2 model", g({"-m", gpt2, "--prompt-ids", "1", "--adapter", adapter_ok.string()}), "Llama family"},
      {"quantize to 3 bits", {"quantize", "-m", gpt2, "--bits", "3", "--out", q_out}, "--bits", {}, q_out},
      {"quantize into a non-empty folder", {"quantize", "-m", gpt2, "--out", (s / "r_opt").string()}, "r_opt"},
  };
  // The environment (read when the WebGPU device opens).
  if (forge::testing::webgpu_built())
    cases.insert(cases.end(), {
        {"FORGE_GPU_TIMEOUT not a number", {"info"}, "FORGE_GPU_TIMEOUT", {{"FORGE_GPU_TIMEOUT", "abc"}}},
        {"FORGE_GPU_TIMEOUT negative", {"info"}, "FORGE_GPU_TIMEOUT", {{"FORGE_GPU_TIMEOUT", "-3"}}},
        {"FORGE_SWIFTSHADER_ICD not a file", {"info"}, "FORGE_SWIFTSHADER_ICD",
         {{"FORGE_SWIFTSHADER_ICD", (s / "nope.json").string()}, {"VK_LOADER_DRIVERS_SELECT", "nothing"}}},
    });
  ASSERT_GE(cases.size(), 40u);

  int index = 0;
  for (const CliCase& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path err = s / ("err_" + std::to_string(index) + ".txt");
    const fs::path std_out = s / ("out_" + std::to_string(index++) + ".txt");
    CliOptions o;
    o.env = c.env;
    o.stderr_file = err;
    CliProcess p(c.args, std_out, o);
    ASSERT_TRUE(p.wait_for(std::chrono::seconds(120))) << "hung";
    const std::string e = read_bytes(err);
    EXPECT_FALSE(p.signalled()) << "ended by a signal: " << e;
    EXPECT_TRUE(p.wait() == 1 || p.wait() == 2) << "exit " << p.wait() << ": " << e;
    const auto lines = lines_of(e);
    EXPECT_EQ(lines.size(), 1u) << e;
    EXPECT_TRUE(!e.empty() && e.back() == '\n') << e;
    EXPECT_EQ(e.rfind("forge: error: ", 0), 0u) << e;
    EXPECT_NE(e.find(c.keyword), std::string::npos) << "no '" << c.keyword << "' in: " << e;
    if (!c.output.empty()) EXPECT_FALSE(fs::exists(c.output)) << c.output << " was left";
  }
  // No half-written file anywhere (writers go through NAME.tmp*).
  for (const auto& f : fs::recursive_directory_iterator(s))
    EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
  EXPECT_FALSE(fs::exists(out));
}

namespace {

struct LibCase {
  std::string name;
  std::function<void()> call;
  std::string keyword;
};

}  // namespace

TEST(BadInput, LibraryTableEachAForgeErrorOfOneLine) {
  using namespace forge;
  ScratchDir scratch("bad_input_lib");
  const fs::path s = scratch.path;
  const fs::path gpt2_dir = kData / "gpt2-tiny";
  write_file(s / "tokens_truncated.bin", std::string("FGTOK001") + std::string("\x05\0\0\0\0\0\0\0", 8) + "abcd");
  write_file(s / "tokens_magic.bin", std::string("NOTTOKEN") + std::string(8, '\0'));
  const auto model = [&] {
    static std::unique_ptr<CausalLM> m = load_model(gpt2_dir, Device::cpu());
    return m.get();
  };
  const Tokenizer tok = Tokenizer::from_file(kData / "tokenizer-gpt2" / "tokenizer.json");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor logits = Tensor::from_vector<float>({0.f, 1.f, 2.f}, {3});

  const std::vector<LibCase> cases = {
      {"matmul of mismatched inner sizes", [] { matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})); }, "[matmul]"},
      {"add of different dtypes",
       [] { add(Tensor::zeros({2}), Tensor::from_vector<int32_t>({1, 2}, {2})); }, "must be f32"},
      {"tensor from a vector of the wrong size", [] { Tensor::from_vector<float>({1, 2, 3}, {2, 2}); }, "3 values for shape [2, 2]"},
      {"negative shape", [] { Tensor::zeros({2, -1}); }, "-1"},
      {"sample with a negative temperature",
       [&] { sample(logits, SampleOptions{.temperature = -1.0f}); }, "temperature"},
      {"sample with a NaN temperature", [&] { sample(logits, SampleOptions{.temperature = nan}); }, "temperature"},
      {"sample with top-p 0", [&] { sample(logits, SampleOptions{.temperature = 1.0f, .top_p = 0.0f}); }, "top_p"},
      {"sample with top-p NaN", [&] { sample(logits, SampleOptions{.temperature = 1.0f, .top_p = nan}); }, "top_p"},
      {"generate with an empty prompt", [&] { generate(*model(), {}, GenerateOptions{}); }, "prompt"},
      {"generate with an id past the vocab", [&] { generate(*model(), {1, 5000}, GenerateOptions{}); }, "out of range"},
      {"generate past the context",
       [&] {
         GenerateOptions o;
         o.max_new_tokens = 100;
         generate(*model(), {1, 2, 3}, o);
       },
       "context length"},
      {"load a missing model folder", [&] { load_model(s / "nope", Device::cpu()); }, "nope"},
      {"config with zero heads",
       [&] { parse_config(replaced(read_bytes(gpt2_dir / "config.json"), "\"n_head\": 2", "\"n_head\": 0"), "c.json"); },
       "n_head"},
      {"config that is not JSON", [] { parse_config("{\"model_type\": ", "c.json"); }, "c.json"},
      {"random GPT-2 with zero heads",
       [] {
         Gpt2Config c;
         c.vocab_size = 16;
         c.n_positions = 8;
         c.n_embd = 8;
         c.n_layer = 1;
         c.n_head = 0;
         Gpt2::random(c, 1, Device::cpu());
       },
       "n_head"},
      {"encode invalid UTF-8", [&] { tok.encode("ab\xC3"); }, "UTF-8"},
      {"decode an id past the vocab", [&] { tok.decode(std::vector<uint32_t>{70000}); }, "out of range"},
      {"tokenizer file missing", [&] { Tokenizer::from_file(s / "nope.json"); }, "nope.json"},
      {"chat template syntax error", [] { ChatTemplate("{% if %}"); }, "chat-template"},
      {"truncated token file", [&] { cli::read_token_file(s / "tokens_truncated.bin"); }, "tokens_truncated.bin"},
      {"token file of another format", [&] { cli::read_token_file(s / "tokens_magic.bin"); }, "tokens_magic.bin"},
      {"safetensors file missing", [&] { load_model(s, Device::cpu()); }, "config.json"},
  };
  for (const LibCase& c : cases) {
    SCOPED_TRACE(c.name);
    try {
      c.call();
      ADD_FAILURE() << "no error";
    } catch (const forge::Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(c.keyword), std::string::npos) << "no '" << c.keyword << "' in: " << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a forge::Error: " << e.what();
    }
  }
}
