#include "hub/hub_fetch.h"

#include <cstdio>
#include <filesystem>
#include <memory>

#include "hub/hub_hash.h"

namespace forge::hub {

namespace fs = std::filesystem;

namespace {

// huggingface_hub's _normalize_etag: no weak marker, no quotes.
std::string normalize_etag(std::string e) {
  if (e.rfind("W/", 0) == 0) e = e.substr(2);
  if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
  return e;
}

bool is_hex(const std::string& s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_redirect(long status) { return status == 301 || status == 302 || status == 303 || status == 307 || status == 308; }

// A NetworkError's text without its "[hub] " prefix, to quote inside another message.
std::string cause(const NetworkError& e) {
  std::string s = e.what();
  return s.rfind("[hub] ", 0) == 0 ? s.substr(6) : s;
}

uint64_t file_size_or_zero(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

}  // namespace

Fetcher::Fetcher(const HubOptions& options, const std::string& repo, const std::string& revision,
                 const RepoCache& cache, Progress& progress)
    : options_(options), repo_(repo), revision_(revision), cache_(cache), progress_(progress) {}

std::string Fetcher::where(const std::string& file) const {
  return "[hub] cannot get " + file + " of " + repo_ + "@" + revision_ + ": ";
}

std::string Fetcher::resolve_url(const std::string& revision, const std::string& file) const {
  return options_.endpoint + "/" + repo_ + "/resolve/" + url_quote(revision, "") + "/" + url_quote(file, "/");
}

// The token goes to the hub only, never to the storage a redirect points at.
std::vector<std::string> Fetcher::headers_for(const std::string& url) const {
  if (options_.token.empty() || url_origin(url) != url_origin(options_.endpoint)) return {};
  return {"Authorization: Bearer " + options_.token};
}

void Fetcher::fail_status(const std::string& file, const HttpResponse& res, const std::string& url) const {
  std::string code = res.header("x-error-code");
  std::string detail = res.header("x-error-message");
  std::string why;
  if (res.status == 401 || res.status == 403) {
    why = "access denied (" + std::to_string(res.status) + (code.empty() ? "" : " " + code) + "): ";
    if (options_.token.empty())
      why += "the repository is gated or private (or does not exist); set HF_TOKEN to a token that has access (" +
             options_.endpoint + "/settings/tokens)";
    else
      why += "the token from HF_TOKEN has no access; request access on " + options_.endpoint + "/" + repo_ +
             " or use another token";
  } else if (res.status == 404 && code == "RepoNotFound") {
    why = "no such repository on " + options_.endpoint + " (404)";
  } else if (res.status == 404 && code == "RevisionNotFound") {
    why = "no revision '" + revision_ + "' in the repository (404)";
  } else if (res.status == 404) {
    why = "not found (404" + (code.empty() ? "" : " " + code) + ": no such repository, revision or file)";
  } else {
    why = "HTTP " + std::to_string(res.status) + " from " + url;
  }
  if (!detail.empty()) why += " [" + detail + "]";
  throw IoError(where(file) + why);
}

std::optional<FileMeta> Fetcher::head(const std::string& revision, const std::string& file) {
  std::string url = resolve_url(revision, file);
  HttpResponse res;
  // Relative redirects (a renamed repository) are followed; an absolute one
  // is the LFS storage and ends the metadata request, as in huggingface_hub.
  for (int hops = 0;; ++hops) {
    try {
      res = http_.head(url, headers_for(url));
    } catch (const NetworkError& e) {
      throw NetworkError(where(file) + "network failure: " + cause(e));
    }
    std::string loc = res.header("location");
    if (!is_redirect(res.status) || loc.empty() || loc[0] != '/' || (loc.size() > 1 && loc[1] == '/')) break;
    if (hops == 5) throw IoError(where(file) + "too many redirects from " + url);
    url = url_origin(options_.endpoint) + loc;
  }
  if (res.status == 404 && res.header("x-error-code") == "EntryNotFound") return std::nullopt;
  if (res.status >= 400 || (res.status >= 300 && !is_redirect(res.status)) || res.status < 200) fail_status(file, res, url);

  FileMeta m;
  m.commit = res.header("x-repo-commit");
  m.lfs = !res.header("x-linked-etag").empty();
  m.etag = normalize_etag(m.lfs ? res.header("x-linked-etag") : res.header("etag"));
  std::string size = m.lfs ? res.header("x-linked-size") : res.header("content-length");
  if (m.commit.empty() || !is_commit_hash(m.commit))
    throw IoError(where(file) + options_.endpoint + " did not answer as the Hugging Face hub does (no X-Repo-Commit header)");
  if (m.etag.empty() || m.etag.find('/') != std::string::npos || m.etag[0] == '.')
    throw IoError(where(file) + "the hub reported no usable ETag");
  if (size.empty() || size.find_first_not_of("0123456789") != std::string::npos)
    throw IoError(where(file) + "the hub reported no file size");
  m.size = std::stoull(size);
  std::string loc = res.header("location");
  m.location = is_redirect(res.status) && !loc.empty() ? loc : resolve_url(m.commit, file);
  return m;
}

void Fetcher::fetch(const std::string& file, const FileMeta& meta) {
  std::error_code ec;
  if (!fs::is_regular_file(cache_.blob(meta.etag), ec)) {
    FileLock lock(cache_.lock_file(meta.etag));
    if (!fs::is_regular_file(cache_.blob(meta.etag), ec)) download_blob(file, meta);
  }
  cache_.link(meta.commit, file, meta.etag);
}

void Fetcher::download_blob(const std::string& file, const FileMeta& meta) {
  fs::path blob = cache_.blob(meta.etag);
  fs::path part = blob.string() + ".incomplete";
  std::error_code ec;
  fs::create_directories(blob.parent_path(), ec);
  uint64_t offset = file_size_or_zero(part);
  if (offset > meta.size) fs::remove(part, ec), offset = 0;

  if (offset < meta.size || !fs::exists(part, ec)) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(part.c_str(), "ab"), &std::fclose);
    if (!out) throw IoError(where(file) + "cannot write " + part.string());
    progress_.start_file(file, meta.size, offset);
    HttpResponse res;
    try {
      res = http_.download(meta.location, headers_for(meta.location), out.get(), offset,
                           [this](uint64_t n) { progress_.update(n); });
    } catch (const NetworkError& e) {
      out.reset();
      throw NetworkError(where(file) + "download broke off at " + human_bytes(file_size_or_zero(part)) + " of " +
                         human_bytes(meta.size) + " (" + cause(e) + "); run again to resume");
    }
    out.reset();
    if (res.status == 416) fs::remove(part, ec);  // our partial file does not fit the server's: start anew next time
    if (res.status != 200 && res.status != 206) fail_status(file, res, meta.location);
  }

  uint64_t have = file_size_or_zero(part);
  progress_.end_file(have);
  if (have != meta.size) {
    fs::remove(part, ec);
    throw IoError(where(file) + "size mismatch: the hub reports " + std::to_string(meta.size) + " bytes, " +
                  std::to_string(have) + " arrived; the file was deleted");
  }
  // LFS files are named by their sha256; regular files by their git blob sha1.
  std::string kind, got;
  if (meta.lfs && is_hex(meta.etag, 64)) kind = "sha256", got = sha256_file(part);
  else if (!meta.lfs && is_hex(meta.etag, 40)) kind = "git sha1", got = git_blob_sha1_file(part);
  if (!kind.empty() && got != meta.etag) {
    fs::remove(part, ec);
    throw IoError(where(file) + "checksum mismatch: " + kind + " " + got + " downloaded, " + meta.etag +
                  " expected; the file was deleted");
  }
  fs::rename(part, blob, ec);
  if (ec) throw IoError(where(file) + "cannot move " + part.string() + " to " + blob.string() + ": " + ec.message());
}

}  // namespace forge::hub
