// The HTTP layer under the hub downloads: one libcurl easy handle per client,
// HEAD requests for metadata and GET requests streamed into a file.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "forge/error.h"

namespace forge::hub {

// The server could not be reached or the transfer broke off; the caller may
// fall back to the cache. Other failures are plain IoErrors.
class NetworkError : public IoError {
 public:
  using IoError::IoError;
};

struct HttpResponse {
  long status = 0;
  std::map<std::string, std::string> headers;  // of the last response; names lower-case
  std::string body;                            // error bodies and small GETs (capped at 64 KiB)

  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// (bytes of the file so far, including a resumed prefix) -> nothing.
using ProgressFn = std::function<void(uint64_t)>;

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // HEAD without following redirects ("Accept-Encoding: identity", so that
  // Content-Length is the file's size). Throws NetworkError.
  HttpResponse head(const std::string& url, const std::vector<std::string>& headers);
  // GET following redirects, the body in memory. Throws NetworkError.
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers);
  // GET following redirects, appending the body to `file` (opened for append,
  // at `offset` bytes): with offset > 0 it asks for "Range: bytes=offset-";
  // a server that answers 200 instead of 206 has the file truncated and
  // rewritten from the start (`offset` is then set to 0). Only 200/206 bodies
  // reach the file. Throws NetworkError when the transfer breaks off.
  HttpResponse download(const std::string& url, const std::vector<std::string>& headers, std::FILE* file,
                        uint64_t& offset, const ProgressFn& progress);

 private:
  void* curl_;  // CURL*
};

// "https://host:port" of a URL (scheme and authority), for same-host checks.
std::string url_origin(const std::string& url);
// Percent-encodes everything but unreserved characters and those in `safe`.
std::string url_quote(const std::string& s, const std::string& safe);

}  // namespace forge::hub
