// libcurl behind HttpClient: headers are parsed per response (a redirect
// starts a new set), bodies go to memory or to the download file.
#include "hub/hub_http.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace forge::hub {

namespace {

constexpr size_t kBodyCap = 64 * 1024;

struct Transfer {
  CURL* curl = nullptr;
  HttpResponse* res = nullptr;
  std::FILE* file = nullptr;    // null: the body goes to res->body
  uint64_t* offset = nullptr;   // bytes of the file before this transfer
  uint64_t written = 0;
  bool decided = false, to_file = false, disk_error = false;
  std::string range_error;
  const ProgressFn* progress = nullptr;
};

std::string trim(std::string s) {
  auto ws = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && ws(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && ws(s[i])) ++i;
  return s.substr(i);
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or a 100)
    t->res->headers.clear();
    auto sp = line.find(' ');
    t->res->status = sp == std::string::npos ? 0 : std::strtol(line.c_str() + sp + 1, nullptr, 10);
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    t->res->headers[name] = trim(line.substr(colon + 1));
  }
  return size * n;
}

// The first body bytes decide where the body goes: only a 200 or 206 answer
// to a download reaches the file.
bool decide(Transfer* t) {
  long status = 0;
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &status);
  t->decided = true;
  if (!t->file || (status != 200 && status != 206)) return true;
  if (status == 200 && *t->offset > 0) {  // the server ignored the Range: start over
    std::fflush(t->file);
    if (ftruncate(fileno(t->file), 0) != 0) return t->disk_error = true, false;
    *t->offset = 0;
  }
  if (status == 206) {
    std::string want = "bytes " + std::to_string(*t->offset) + "-";
    std::string got = t->res->header("content-range");
    if (got.rfind(want, 0) != 0) {
      t->range_error = "asked for bytes " + std::to_string(*t->offset) + "- and got Content-Range '" + got + "'";
      return false;
    }
  }
  t->to_file = true;
  return true;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (!t->decided && !decide(t)) return 0;
  if (!t->to_file) {
    t->res->body.append(data, std::min(len, kBodyCap - std::min(kBodyCap, t->res->body.size())));
    return len;
  }
  if (std::fwrite(data, 1, len, t->file) != len) return t->disk_error = true, 0;
  t->written += len;
  if (t->progress && *t->progress) (*t->progress)(*t->offset + t->written);
  return len;
}

struct HeaderList {
  curl_slist* list = nullptr;
  explicit HeaderList(const std::vector<std::string>& headers) {
    for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  }
  ~HeaderList() { curl_slist_free_all(list); }
};

HttpResponse perform(CURL* curl, const std::string& url, const std::vector<std::string>& headers, bool head,
                     std::FILE* file, uint64_t* offset, const ProgressFn* progress) {
  HttpResponse res;
  Transfer t;
  t.curl = curl;
  t.res = &res;
  t.file = file;
  t.offset = offset;
  t.progress = progress;
  std::vector<std::string> all = headers;
  if (head) all.push_back("Accept-Encoding: identity");
  if (file && *offset > 0) all.push_back("Range: bytes=" + std::to_string(*offset) + "-");
  HeaderList list(all);
  char err[CURL_ERROR_SIZE] = {0};

  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list.list);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "forge/" FORGE_VERSION);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);  // huggingface_hub waits 10 s too
  // A stalled transfer (under 1 byte/s for a minute) is a network failure.
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  if (head) {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else {
    // A custom Authorization header is not sent on to another host.
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  }
  CURLcode rc = curl_easy_perform(curl);
  if (t.disk_error) throw IoError("[hub] cannot write the downloaded bytes (disk full?)");
  if (!t.range_error.empty()) throw IoError("[hub] resuming " + url + ": " + t.range_error);
  if (rc != CURLE_OK) {
    std::string why = err[0] ? std::string(err) : std::string(curl_easy_strerror(rc));
    throw NetworkError("[hub] " + url + ": " + trim(why));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &res.status);
  return res;
}

}  // namespace

HttpClient::HttpClient() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
  if (!curl_) throw IoError("[hub] cannot start libcurl");
}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

HttpResponse HttpClient::head(const std::string& url, const std::vector<std::string>& headers) {
  return perform(static_cast<CURL*>(curl_), url, headers, true, nullptr, nullptr, nullptr);
}

HttpResponse HttpClient::get(const std::string& url, const std::vector<std::string>& headers) {
  return perform(static_cast<CURL*>(curl_), url, headers, false, nullptr, nullptr, nullptr);
}

HttpResponse HttpClient::download(const std::string& url, const std::vector<std::string>& headers, std::FILE* file,
                                  uint64_t& offset, const ProgressFn& progress) {
  HttpResponse res = perform(static_cast<CURL*>(curl_), url, headers, false, file, &offset, &progress);
  if (std::fflush(file) != 0) throw IoError("[hub] cannot write the downloaded bytes (disk full?)");
  return res;
}

std::string url_origin(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  auto end = url.find_first_of("/?#", scheme + 3);
  return url.substr(0, end);
}

std::string url_quote(const std::string& s, const std::string& safe) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || safe.find(static_cast<char>(c)) != std::string::npos) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

}  // namespace forge::hub
