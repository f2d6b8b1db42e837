// One repository's files from the hub into the cache: metadata by HEAD on
// ENDPOINT/<repo>/resolve/<revision>/<file> (as huggingface_hub asks for it),
// then the bytes into blobs/<etag>.incomplete, resumed with a Range request,
// checked against the reported size and sha256 (or git blob sha1), moved to
// blobs/<etag> and linked from snapshots/<commit>/<file>.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "forge/hub.h"
#include "hub/hub_cache.h"
#include "hub/hub_http.h"
#include "hub/hub_progress.h"

namespace forge::hub {

struct FileMeta {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // X-Linked-Etag (LFS: the sha256) or ETag (git blob sha1), unquoted
  uint64_t size = 0;     // X-Linked-Size or Content-Length
  bool lfs = false;
  std::string location;  // where the bytes are (the LFS redirect's target, else the resolve URL at the commit)
};

class Fetcher {
 public:
  // `revision` is the one asked for, for messages.
  Fetcher(const HubOptions& options, const std::string& repo, const std::string& revision, const RepoCache& cache,
          Progress& progress);

  // The file's metadata at `revision` (a branch, tag or commit); nothing when
  // the repository lacks the file (404 EntryNotFound). Throws IoError naming
  // the repository and the cause for everything else (NetworkError when the
  // hub cannot be reached).
  std::optional<FileMeta> head(const std::string& revision, const std::string& file);
  // The blob (downloaded unless already in the cache) and the snapshot link.
  void fetch(const std::string& file, const FileMeta& meta);

  // "cannot get FILE of org/name@rev: " for messages.
  std::string where(const std::string& file) const;

 private:
  std::vector<std::string> headers_for(const std::string& url) const;
  std::string resolve_url(const std::string& revision, const std::string& file) const;
  void download_blob(const std::string& file, const FileMeta& meta);
  [[noreturn]] void fail_status(const std::string& file, const HttpResponse& res, const std::string& url) const;

  const HubOptions& options_;
  std::string repo_, revision_;
  const RepoCache& cache_;
  Progress& progress_;
  HttpClient http_;
};

}  // namespace forge::hub
