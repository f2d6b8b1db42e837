// libFuzzer target for tokenizer.json (Tokenizer::from_file). The input is
// written to a file and loaded: it must be refused with IoError or ValueError
// (a regex that does not compile) or give a tokenizer that encodes a few
// probe texts (and the input's own first bytes) into ids below vocab_size()
// that decode without error, the same through StreamDecoder, and refuses
// invalid UTF-8 with ValueError. Anything else (another exception, a
// sanitizer report, an abort) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forge/error.h"
#include "forge/tokenizer.h"
#include "../unit/process_temp_dir.h"
#include "text/utf8.h"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_tokenizer: invariant failed: %s\n", what);
    std::abort();
  }
}

const std::filesystem::path& scratch() {
  static const std::filesystem::path p = forge::testing::process_temp_dir("fuzz_tokenizer") / "tokenizer.json";
  return p;
}

void probe(const forge::Tokenizer& tok, std::string_view text) {
  for (bool special : {true, false}) {
    std::vector<std::uint32_t> ids;
    try {
      ids = special ? tok.encode(text, true) : tok.encode_ordinary(text);
    } catch (const forge::ValueError&) {
      continue;  // a character the vocab cannot spell (no byte fallback, no unk)
    }
    for (std::uint32_t id : ids) check(id < tok.vocab_size(), "encode gives ids below vocab_size");
    const std::string text_out = tok.decode(ids);  // ids from encode always decode
    forge::StreamDecoder stream(tok);
    std::string streamed;
    for (std::uint32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    check(forge::text::utf8_first_invalid(streamed) == std::string::npos, "streamed decode is valid UTF-8");
    // Inexact only where the decoder rewrote emitted text, which it reports.
    check(!stream.exact() || streamed == text_out, "streamed decode equals decode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream f(scratch(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  std::optional<forge::Tokenizer> tok;
  try {
    tok = forge::Tokenizer::from_file(scratch());
  } catch (const forge::IoError&) {
    return 0;
  } catch (const forge::ValueError&) {
    return 0;
  }
  for (const char* text : {"Hello, world!", " the cat  sat\n\n", "12345 caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC",
                           "<|endoftext|><s></s>", ""}) {
    probe(*tok, text);
  }
  // The input's own first bytes, when they are text: strings of the file
  // itself (token spellings, added tokens) are the likeliest to reach merges.
  std::string_view head(reinterpret_cast<const char*>(data), size < 96 ? size : 96);
  if (forge::text::utf8_first_invalid(head) == std::string_view::npos) probe(*tok, head);
  try {
    (void)tok->encode("ok \xFF");
    check(false, "invalid UTF-8 was encoded");
  } catch (const forge::ValueError&) {
  }
  return 0;
}
