// Oniguruma behind text::Regex. A compiled regex_t is only read by
// onig_search, so one Regex serves several threads; each call has its own region.
#include <oniguruma.h>

#include <mutex>
#include <string>

#include "forge/error.h"
#include "text/regex.h"

namespace forge::text {

namespace {

std::string onig_message(int code, OnigErrorInfo* info) {
  OnigUChar buf[ONIG_MAX_ERROR_MESSAGE_LEN];
  const int n = info ? onig_error_code_to_str(buf, code, info) : onig_error_code_to_str(buf, code);
  return std::string(reinterpret_cast<const char*>(buf), n > 0 ? n : 0);
}

class OnigRegex final : public Regex {
 public:
  explicit OnigRegex(std::string_view pattern) {
    static std::once_flag init;
    std::call_once(init, [] {
      OnigEncoding enc = ONIG_ENCODING_UTF8;
      onig_initialize(&enc, 1);
    });
    OnigErrorInfo info;
    const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
    const int rc = onig_new(&re_, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                            ONIG_SYNTAX_RUBY, &info);
    if (rc != ONIG_NORMAL) {
      throw ValueError("[regex] cannot compile '" + std::string(pattern) +
                       "': " + onig_message(rc, &info));
    }
  }
  ~OnigRegex() override { onig_free(re_); }
  OnigRegex(const OnigRegex&) = delete;
  OnigRegex& operator=(const OnigRegex&) = delete;

  std::optional<Span> find(std::string_view text, std::size_t from) const override {
    struct Region {
      OnigRegion* r = onig_region_new();
      ~Region() { onig_region_free(r, 1); }
    };
    thread_local Region region;
    const auto* s = reinterpret_cast<const OnigUChar*>(text.data());
    const OnigUChar* end = s + text.size();
    const int at = onig_search(re_, s, end, s + from, end, region.r, ONIG_OPTION_NONE);
    if (at == ONIG_MISMATCH) return std::nullopt;
    if (at < 0) throw ValueError("[regex] search failed: " + onig_message(at, nullptr));
    return Span{static_cast<std::size_t>(region.r->beg[0]),
                static_cast<std::size_t>(region.r->end[0])};
  }

 private:
  regex_t* re_ = nullptr;
};

}  // namespace

std::unique_ptr<Regex> compile_regex(std::string_view pattern) {
  return std::make_unique<OnigRegex>(pattern);
}

}  // namespace forge::text
