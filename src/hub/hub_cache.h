// One repository's folder in the Hugging Face cache, laid out as
// huggingface_hub lays it out (see include/forge/hub.h):
//   CACHE/models--org--name/{blobs,snapshots,refs,.no_exist}
//   CACHE/.locks/models--org--name/<etag>.lock
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace forge::hub {

class RepoCache {
 public:
  RepoCache(const std::filesystem::path& cache_dir, const std::string& repo);

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path blob(const std::string& etag) const { return root_ / "blobs" / etag; }
  std::filesystem::path snapshot(const std::string& commit) const { return root_ / "snapshots" / commit; }
  std::filesystem::path lock_file(const std::string& etag) const { return locks_ / (etag + ".lock"); }

  // The commit a revision names in the cache: refs/<revision>, or the
  // revision itself when it is a commit hash with a snapshot folder.
  std::optional<std::string> commit_for(const std::string& revision) const;
  // Writes refs/<revision> (unless the revision is the commit itself).
  void write_ref(const std::string& revision, const std::string& commit) const;

  // snapshots/<commit>/<file> exists and its target too.
  bool has_file(const std::string& commit, const std::string& file) const;
  // .no_exist/<commit>/<file>: the repository lacks the file at that commit.
  bool known_missing(const std::string& commit, const std::string& file) const;
  void mark_missing(const std::string& commit, const std::string& file) const;  // never throws
  // snapshots/<commit>/<file> -> ../../blobs/<etag> (one more ../ per folder in `file`).
  void link(const std::string& commit, const std::string& file, const std::string& etag) const;

 private:
  std::filesystem::path root_, locks_;
};

// An exclusive flock(2) on a file, released on destruction (the same lock
// huggingface_hub's filelock takes, so the two never write one blob at once).
class FileLock {
 public:
  explicit FileLock(const std::filesystem::path& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

// A 40-character lower-case hex string (a git commit or blob sha1).
bool is_commit_hash(const std::string& s);
// A relative path of safe components (no "..", ".", empty parts, backslashes).
bool is_safe_repo_path(const std::string& file);

}  // namespace forge::hub
