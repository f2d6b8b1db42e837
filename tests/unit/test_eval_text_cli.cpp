// forge eval --text-file (sliding-window loss and perplexity) and the
// tokenize --out -> eval --input round trip, through the command line. The
// reference NLL is computed here from the library's whole-window mean loss
// (causal_lm_loss): because the model is causal, the NLL a window scores on
// its ids [p, e) is (e - b - 1) * loss([b, e)) - (p - b - 1) * loss([b, p)).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "forge/model.h"
#include "forge/safetensors.h"
#include "forge/tokenizer.h"
#include "unit/cli_shell.h"
#include "unit/this_build.h"

namespace {

const std::string kData = forge::testing::test_data_dir();
const std::string kModel = kData + "/gpt2-vocab50257";  // n_positions 64
const std::string kTok = kData + "/tokenizer-gpt2/tokenizer.json";

using forge::testing::CliResult;
using forge::testing::CliTempDir;
using forge::testing::last_json_line;
using forge::testing::run_forge;

const char* kText =
    "The river bends twice before it reaches the town, and in spring the water rises over the low "
    "meadows where the children used to play. Nobody remembers who built the first bridge; the stones "
    "are older than the church, older than the mill, perhaps older than the road itself. Travellers "
    "stop there to rest their horses, to ask the way, or simply to watch the slow brown current carry "
    "leaves and branches toward the sea, which none of them has ever seen.\n"
    "In the autumn the ferryman paints his boat, mends the nets, and counts the geese that fly south over "
    "the hills; he says the winters are shorter now, though his grandmother would have called that nonsense.\n";

std::string write_file(const CliTempDir& tmp, const std::string& name, const std::string& text) {
  const std::string path = (tmp.path / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Summed NLL of ids b+1 .. e-1 from the whole window [b, e).
double window_nll(const forge::CausalLM& model, const std::vector<uint32_t>& ids, int64_t b, int64_t e) {
  if (e - b < 2) return 0;
  forge::Tensor t = forge::Tensor::from_vector(std::vector<uint32_t>(ids.begin() + b, ids.begin() + e), {1, e - b});
  return double(forge::causal_lm_loss(model.forward(t), t)) * double(e - b - 1);
}

struct Reference {
  double nll = 0;
  int64_t tokens = 0, windows = 0;
};

// Hugging Face's perplexity loop: windows [b, min(b + ctx, T)) for b = 0,
// stride, ...; each scores the ids from the previous window's end (and never
// its own first id) to its end.
Reference sliding_reference(const forge::CausalLM& model, const std::vector<uint32_t>& ids, int64_t ctx, int64_t stride) {
  Reference r;
  const int64_t T = int64_t(ids.size());
  int64_t prev_end = 0;
  for (int64_t b = 0;; b += stride) {
    const int64_t e = std::min(b + ctx, T), first = std::max(prev_end, b + 1);
    if (first < e) {
      r.nll += window_nll(model, ids, b, e) - window_nll(model, ids, b, first);
      r.tokens += e - first;
      ++r.windows;
    }
    prev_end = e;
    if (e == T) break;
  }
  return r;
}

}  // namespace

TEST(EvalTextCli, SlidingWindowMatchesTheLibrary) {
  CliTempDir tmp("eval_text");
  const std::string file = write_file(tmp, "river.txt", kText);
  const std::vector<uint32_t> ids = forge::Tokenizer::from_file(kTok).encode(kText);
  const int64_t T = int64_t(ids.size());
  ASSERT_GT(T, 64 + 64 / 2) << "the text should span several windows";
  auto model = forge::load_model(kModel, forge::Device::cpu());
  struct Case {
    int64_t ctx, stride;
    std::string flags;
  };
  for (const Case& c : {Case{64, 64, ""}, Case{64, 16, " --stride 16"}, Case{40, 40, " --ctx 40"},
                        Case{40, 25, " --ctx 40 --stride 25"}, Case{9, 4, " --ctx 9 --stride 4"}}) {
    const Reference ref = sliding_reference(*model, ids, c.ctx, c.stride);
    CliResult r = run_forge("eval --model " + kModel + " --text-file " + file + " --tokenizer " + kTok + c.flags +
                                " --device cpu --json",
                            false);
    ASSERT_EQ(r.code, 0) << c.flags << "\n" << r.out;
    const nlohmann::json j = last_json_line(r.out);
    // Sums of f32 losses over ~150 ids: 1e-4 relative.
    EXPECT_NEAR(j["nll_sum"].get<double>(), ref.nll, 1e-4 * ref.nll) << c.flags;
    EXPECT_EQ(j["tokens"], ref.tokens) << c.flags;
    EXPECT_EQ(j["windows"], ref.windows) << c.flags;
    EXPECT_EQ(j["text_tokens"], T);
    EXPECT_EQ(j["ctx"], c.ctx);
    EXPECT_EQ(j["stride"], c.stride);
    EXPECT_NEAR(j["loss"].get<double>(), ref.nll / double(ref.tokens), 1e-4) << c.flags;
    EXPECT_NEAR(j["perplexity"].get<double>(), std::exp(ref.nll / double(ref.tokens)),
                1e-3 * std::exp(ref.nll / double(ref.tokens)))
        << c.flags;
    // A stride below the context scores every id after the first once; disjoint
    // windows leave each window's first id unscored.
    EXPECT_EQ(ref.tokens, c.stride < c.ctx ? T - 1 : T - ref.windows) << c.flags;
  }
  if (forge::testing::webgpu_built()) {
    // WebGPU: the same windows of a short text (SwiftShader runs the 50257-way
    // head slowly), within 1e-3 relative (long f32 reductions on the device).
    const std::string short_file = write_file(tmp, "short.txt", "Nobody remembers who built the first bridge.\n");
    const std::string window_flags = " --tokenizer " + kTok + " --ctx 8 --stride 3 --json --device ";
    CliResult c = run_forge("eval --model " + kModel + " --text-file " + short_file + window_flags + "cpu", false);
    CliResult g = run_forge("eval --model " + kModel + " --text-file " + short_file + window_flags + "webgpu", false);
    ASSERT_EQ(c.code, 0) << c.out;
    ASSERT_EQ(g.code, 0) << g.out;
    EXPECT_GE(last_json_line(c.out)["windows"], 2);
    EXPECT_EQ(last_json_line(g.out)["tokens"], last_json_line(c.out)["tokens"]);
    const double lc = last_json_line(c.out)["loss"], lg = last_json_line(g.out)["loss"];
    EXPECT_NEAR(lg, lc, 1e-3 * lc);
  }
  // Without --json: one readable line.
  CliResult text = run_forge("eval --model " + kModel + " --text-file " + file + " --tokenizer " + kTok + " --device cpu",
                             false);
  ASSERT_EQ(text.code, 0) << text.out;
  EXPECT_NE(text.out.find("perplexity"), std::string::npos) << text.out;
}

TEST(EvalTextCli, TokenizeOutThenEvalInput) {
  // tokenize --out writes input_ids i32 [1, T]; eval --input on it gives the
  // whole-sequence loss, which is what --text-file gives for one window.
  CliTempDir tmp("tok_out");
  const std::string text = "Nobody remembers who built the first bridge over the river.";
  const std::string file = write_file(tmp, "short.txt", text);
  const std::string out = (tmp.path / "in.safetensors").string();
  CliResult r = run_forge("tokenize --tokenizer " + kTok + " --text-file " + file + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  CliResult ids_json = run_forge("tokenize --tokenizer " + kTok + " --text-file " + file + " --json", false);
  const std::vector<uint32_t> ids = last_json_line(ids_json.out)["ids"].get<std::vector<uint32_t>>();
  {
    forge::SafetensorsFile f = forge::SafetensorsFile::open(out);
    forge::TensorView v = f.get("input_ids");
    EXPECT_EQ(v.dtype(), forge::StDType::I32);
    EXPECT_EQ(v.shape(), (std::vector<int64_t>{1, int64_t(ids.size())}));
    const std::vector<float> got = v.to_f32();
    EXPECT_EQ(std::vector<uint32_t>(got.begin(), got.end()), ids);
  }
  r = run_forge("eval --model " + kModel + " --input " + out + " --device cpu --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json in = last_json_line(r.out);
  r = run_forge("eval --model " + kModel + " --text-file " + file + " --tokenizer " + kTok + " --device cpu --json",
                false);
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json tx = last_json_line(r.out);
  EXPECT_EQ(in["tokens"], int64_t(ids.size()) - 1);
  EXPECT_EQ(tx["tokens"], in["tokens"]);
  EXPECT_NEAR(in["loss"].get<double>(), tx["loss"].get<double>(), 1e-5);
  auto model = forge::load_model(kModel, forge::Device::cpu());
  forge::Tensor t = forge::Tensor::from_vector(ids, {1, int64_t(ids.size())});
  EXPECT_NEAR(in["loss"].get<double>(), forge::causal_lm_loss(model->forward(t), t), 1e-5);

  // --batch: one row per line, rows of one length; others are refused.
  const std::string two = write_file(tmp, "two.txt", "the river bends\n\nthe stones are\n");
  r = run_forge("tokenize --tokenizer " + kTok + " --text-file " + two + " --out " + out + " --batch --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["shape"], (std::vector<int>{2, 3}));
  r = run_forge("eval --model " + kModel + " --input " + out + " --device cpu --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(last_json_line(r.out)["tokens"], 4);
  const std::string uneven = write_file(tmp, "uneven.txt", "the river bends\nthe stones are older\n");
  r = run_forge("tokenize --tokenizer " + kTok + " --text-file " + uneven + " --out " + out + " --batch");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("line 2 has 4 tokens"), std::string::npos) << r.out;
  r = run_forge("tokenize --tokenizer " + kTok + " --text hi --batch");
  EXPECT_EQ(r.code, 2) << "--batch needs --out\n" << r.out;
}

TEST(EvalTextCli, Errors) {
  CliTempDir tmp("eval_err");
  const std::string base = "eval --model " + kModel + " --tokenizer " + kTok + " --device cpu --text-file ";
  const std::string river = write_file(tmp, "river.txt", kText);
  CliResult r = run_forge(base + write_file(tmp, "empty.txt", ""));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is empty"), std::string::npos) << r.out;
  r = run_forge(base + write_file(tmp, "one.txt", "river"));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("holds 1 token(s); a loss needs at least 2"), std::string::npos) << r.out;
  r = run_forge(base + river + " --stride 65");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("forge: error: --stride must be <= 64"), std::string::npos) << r.out;
  r = run_forge(base + river + " --ctx 20 --stride 21");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--stride must be <= 20"), std::string::npos) << r.out;
  for (const std::string bad : {" --stride -1", " --ctx 65", " --ctx 1", " --ctx x"}) {
    r = run_forge(base + river + bad);
    EXPECT_EQ(r.code, 2) << bad << "\n" << r.out;
    EXPECT_EQ(r.out.rfind("forge: error: ", 0), 0u) << bad << "\n" << r.out;
  }
  r = run_forge(base + tmp.path.string() + "/missing.txt");
  EXPECT_EQ(r.code, 1) << r.out;
  // Exactly one of --input and --text-file; window flags only with --text-file.
  r = run_forge("eval --model " + kModel + " --device cpu");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run_forge("eval --model " + kModel + " --text-file " + river + " --input x.safetensors");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run_forge("eval --model " + kModel + " --input x.safetensors --stride 4");
  EXPECT_EQ(r.code, 2) << r.out;
}
