// forge train's JSONL data: {"text"} lines as documents, {"messages"} lines
// rendered with a chat template (SmolLM2's ChatML, tests/fixtures) with the
// loss on the assistant's tokens only, and malformed lines named by file and
// line.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "chat_prompt.h"
#include "forge/chat_template.h"
#include "forge/error.h"
#include "forge/tokenizer.h"
#include "train_data.h"
#include "unit/cli_process.h"
#include "unit/this_build.h"

using namespace forge;
using namespace forge::cli;

namespace {

const std::string kData = forge::testing::test_data_dir();

ChatTemplate smollm2_template() {
  std::ifstream f(kData + "/chat-templates/smollm2.json");
  const auto j = nlohmann::json::parse(f);
  return ChatTemplate(j["template"].get<std::string>(), j["bos_token"].get<std::string>(),
                      j["eos_token"].get<std::string>());
}

void write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

}  // namespace

TEST(TrainChatData, TextLinesAreDocuments) {
  forge::testing::ScratchDir dir("chat_data_text");
  write(dir.path / "d.jsonl", "{\"text\": \"ab\"}\n\n{\"text\": \"c\\nd\", \"id\": 3}\n");
  const TrainTokenizer bytes;  // no EOS: the documents are concatenated
  EXPECT_EQ(tokenize_files({(dir.path / "d.jsonl").string()}, bytes),
            (std::vector<uint32_t>{'a', 'b', 'c', '\n', 'd'}));
}

TEST(TrainChatData, MalformedLinesNameFileAndLine) {
  forge::testing::ScratchDir dir("chat_data_bad");
  const TrainTokenizer bytes;
  auto fails_at = [&](const std::string& content, const std::string& where) {
    write(dir.path / "d.jsonl", content);
    try {
      tokenize_files({(dir.path / "d.jsonl").string()}, bytes);
      ADD_FAILURE() << "no error for " << content;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("d.jsonl:" + where), std::string::npos) << e.what();
    }
  };
  fails_at("{\"text\": \"a\"}\n{\"text\": 5}\n", "2");
  fails_at("{\"text\": \"a\"}\n\n{oops\n", "3");
  fails_at("[1, 2]\n", "1");
  fails_at("{\"messages\": []}\n", "1");
  fails_at("{\"messages\": [{\"content\": \"x\"}]}\n", "1");
  fails_at("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n", "1");  // no chat encoder
}

// The assistant's replies (with the end-of-turn the template closes them
// with) carry the loss; the system prompt, user turns and the headers of the
// assistant's turns do not. Unmasked, the ids are those of the whole render.
TEST(TrainChatData, LossOnlyOnAssistantTokens) {
  const Tokenizer tok = Tokenizer::from_path(kData + "/tokenizer-smollm2");
  const ChatTemplate tmpl = smollm2_template();
  const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "Four."},
    {"role": "user", "content": "And 3+3?"},
    {"role": "assistant", "content": "Six, of course."}])");
  const std::vector<uint32_t> ids = encode_chat_for_training(tok, tmpl, messages);
  std::vector<uint32_t> plain, loss;
  for (uint32_t id : ids) {
    plain.push_back(id & ~kNoLoss);
    if (!(id & kNoLoss)) loss.push_back(id);
  }
  EXPECT_EQ(plain, encode_rendered(tok, tmpl.render(messages, false)));
  EXPECT_EQ(tok.decode(loss, false), "Four.<|im_end|>\nSix, of course.<|im_end|>\n");

  // Through a chat JSONL file and windows: a prompt token is no target.
  forge::testing::ScratchDir dir("chat_data_windows");
  write(dir.path / "c.jsonl", "{\"messages\": " + messages.dump() + "}\n");
  TrainTokenizer t;
  t.bpe = tok;
  const std::vector<uint32_t> stream = tokenize_files(
      {(dir.path / "c.jsonl").string()}, t, [&](const nlohmann::ordered_json& m) { return encode_chat_for_training(tok, tmpl, m); });
  const int64_t T = int64_t(stream.size()) - 1;
  const Gpt2MicroBatch mb = sample_windows(stream, 1, T, 1, 0, 0, 0);  // the one window: the whole stream
  int64_t targets = 0;
  for (int64_t i = 0; i < T; ++i) {
    const uint32_t next = stream[size_t(i + 1)];
    EXPECT_EQ(mb.targets[size_t(i)], next & kNoLoss ? -1 : int32_t(next)) << i;
    EXPECT_EQ(mb.ids.data<uint32_t>()[i], stream[size_t(i)] & ~kNoLoss) << i;
    targets += mb.targets[size_t(i)] >= 0;
  }
  EXPECT_EQ(targets, int64_t(loss.size()));
}
