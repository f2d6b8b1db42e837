// Chat templates of released models against transformers' apply_chat_template:
// every case of tests/fixtures/chat-templates/*.json (SmolLM2, Llama 3.2,
// Qwen2.5, Mistral in two versions, TinyLlama, Gemma 2) must render byte for
// byte, and raise the same message where transformers raised. A few cases run
// through `forge chat-template` as a user would, and model folders load.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>

#include "forge/chat_template.h"
#include "unit/process_temp_dir.h"
#include "unit/this_build.h"

namespace {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const fs::path kDir = fs::path(forge::testing::test_data_dir()) / "chat-templates";

ojson load(const fs::path& p) {
  std::ifstream in(p);
  return ojson::parse(in);
}

std::optional<std::string> token(const ojson& fixture, const char* key) {
  if (fixture.contains(key) && fixture[key].is_string()) return fixture[key].get<std::string>();
  return std::nullopt;
}

// transformers reports "TemplateError: <message>"; forge's what() is the message.
void expect_error(const std::string& got, const std::string& want, const std::string& where) {
  const std::string prefix = "TemplateError: ";
  if (want.rfind(prefix, 0) == 0) {
    EXPECT_EQ(got, want.substr(prefix.size())) << where;
  } else {
    EXPECT_NE(got.find(want.substr(want.find(": ") + 2)), std::string::npos) << where << ": " << got;
  }
}

struct CliResult {
  int code;
  std::string out, err;
};

// A path in a temp folder private to this process: ctest runs these tests
// side by side, each in a process of its own, and a shared name let one
// test read another's stderr.
fs::path temp_path(const std::string& name) { return forge::testing::process_temp_dir("chat") / name; }

CliResult run_cli(const std::string& args) {
  const fs::path err_file = temp_path("stderr.txt");
  const std::string cmd = std::string(forge::testing::cli_path()) + " " + args + " 2>" + err_file.string();
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "", "popen failed"};
  std::string out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  std::ifstream e(err_file);
  std::string err((std::istreambuf_iterator<char>(e)), {});
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out, err};
}

fs::path write_temp(const std::string& name, const std::string& text) {
  const fs::path p = temp_path(name);
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace

TEST(ChatTemplateGolden, EveryFixtureCaseMatchesTransformers) {
  int files = 0, cases = 0;
  for (const auto& entry : fs::directory_iterator(kDir)) {
    if (entry.path().extension() != ".json") continue;
    ++files;
    const ojson f = load(entry.path());
    const forge::ChatTemplate t(f["template"].get<std::string>(), token(f, "bos_token"), token(f, "eos_token"));
    int k = 0;
    for (const auto& c : f["cases"]) {
      ++cases;
      const std::string where = entry.path().filename().string() + " case " + std::to_string(k++);
      try {
        const std::string text = t.render(c["messages"], c["add_generation_prompt"].get<bool>(), c["kwargs"]);
        if (c.contains("error")) {
          ADD_FAILURE() << where << ": rendered, but transformers raised " << c["error"];
        } else {
          EXPECT_EQ(text, c["text"].get<std::string>()) << where;
        }
      } catch (const forge::TemplateError& e) {
        if (!c.contains("error")) {
          ADD_FAILURE() << where << ": raised " << e.what();
        } else {
          expect_error(e.what(), c["error"].get<std::string>(), where);
        }
      }
    }
  }
  EXPECT_EQ(files, 7);
  EXPECT_GE(cases, 42);
}

TEST(ChatTemplateGolden, CliRendersFixtureCasesAsJson) {
  for (const char* name : {"llama3.2.json", "qwen2.5.json", "gemma2.json"}) {
    const ojson f = load(kDir / name);
    const fs::path tmpl = write_temp(std::string(name) + ".jinja", f["template"].get<std::string>());
    for (const auto& c : f["cases"]) {
      const fs::path msgs = write_temp("messages.json", c["messages"].dump());
      std::string args = "chat-template --template-file " + tmpl.string() + " --messages-file " + msgs.string() + " --json";
      if (c["add_generation_prompt"].get<bool>()) args += " --add-generation-prompt";
      if (f["bos_token"].is_string()) args += " --bos-token '" + f["bos_token"].get<std::string>() + "'";
      if (f["eos_token"].is_string()) args += " --eos-token '" + f["eos_token"].get<std::string>() + "'";
      for (const auto& [k, v] : c["kwargs"].items()) args += " --define '" + k + "=" + v.get<std::string>() + "'";
      const CliResult r = run_cli(args);
      if (c.contains("error")) {
        EXPECT_EQ(r.code, 1) << name << r.out;
        EXPECT_NE(r.err.find(c["error"].get<std::string>().substr(15)), std::string::npos) << r.err;
        EXPECT_EQ(r.out, "");
      } else {
        ASSERT_EQ(r.code, 0) << name << ": " << r.err;
        EXPECT_EQ(ojson::parse(r.out)["text"], c["text"]) << name;
      }
    }
  }
}

TEST(ChatTemplateGolden, CliDefinesParseAsJsonElseString) {
  const fs::path tmpl = write_temp("defines.jinja", "{{ a + 1 }}|{{ b }}|{{ c | length }}|{{ d is string }}");
  const fs::path msgs = write_temp("empty.json", "[]");
  const CliResult r = run_cli("chat-template --template-file " + tmpl.string() + " --messages-file " + msgs.string() +
                              " --define a=2 --define b=true --define 'c=[1,2,3]' --define 'd=26 Jul 2024' --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"text\":\"3|True|3|True\"}\n");
}

TEST(ChatTemplateGolden, ModelFolderTemplateAndTokens) {
  const ojson f = load(kDir / "mistral.json");
  const fs::path dir = temp_path("model");
  fs::create_directories(dir);
  // Named templates (transformers takes "default"); special tokens as {"content": ...} objects.
  ojson cfg = {{"chat_template", ojson::array({{{"name", "tool_use"}, {"template", "wrong"}},
                                                {{"name", "default"}, {"template", f["template"]}}})},
               {"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
               {"eos_token", "</s>"}};
  std::ofstream(dir / "tokenizer_config.json") << cfg.dump();
  const forge::ChatTemplate t = forge::ChatTemplate::from_model_dir(dir.string());
  EXPECT_EQ(t.bos_token(), "<s>");
  EXPECT_EQ(t.eos_token(), "</s>");
  const ojson& c = f["cases"][4];
  EXPECT_EQ(t.render(c["messages"], false), c["text"].get<std::string>());

  const fs::path msgs = write_temp("model_messages.json", c["messages"].dump());
  const CliResult r = run_cli("chat-template --model " + dir.string() + " --messages-file " + msgs.string() + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(ojson::parse(r.out)["text"], c["text"]);

  // chat_template.jinja takes priority over the config's template, as in transformers.
  std::ofstream(dir / "chat_template.jinja") << "{% for m in messages %}{{ m.content + eos_token }}{% endfor %}\n";
  EXPECT_EQ(forge::ChatTemplate::from_model_dir(dir.string()).render(c["messages"], false), "2+2?</s>4</s>And 3+3?</s>");
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "</s>"})";
  EXPECT_EQ(forge::ChatTemplate::from_model_dir(dir.string()).render(c["messages"], false), "2+2?</s>4</s>And 3+3?</s>");

  fs::remove(dir / "chat_template.jinja");
  EXPECT_THROW(forge::ChatTemplate::from_model_dir(dir.string()), forge::IoError);
}
