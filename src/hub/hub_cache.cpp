// The cache folder's files: refs, symlinks into blobs/, .no_exist markers, locks.
#include "hub/hub_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "forge/error.h"

namespace forge::hub {

namespace fs = std::filesystem;

namespace {

// "org/name" -> "models--org--name", as huggingface_hub's repo_folder_name.
std::string folder_name(const std::string& repo) {
  std::string out = "models";
  std::stringstream parts(repo);
  for (std::string part; std::getline(parts, part, '/');) out += "--" + part;
  return out;
}

void make_dirs(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("[hub] cannot create " + dir.string() + ": " + ec.message());
}

}  // namespace

RepoCache::RepoCache(const fs::path& cache_dir, const std::string& repo)
    : root_(cache_dir / folder_name(repo)), locks_(cache_dir / ".locks" / folder_name(repo)) {}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  std::ifstream in(root_ / "refs" / revision);
  if (in) {
    std::string commit;
    std::getline(in, commit);
    if (is_commit_hash(commit)) return commit;
  }
  std::error_code ec;
  if (is_commit_hash(revision) && fs::is_directory(snapshot(revision), ec)) return revision;
  return std::nullopt;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit || commit_for(revision) == commit) return;
  fs::path ref = root_ / "refs" / revision;
  make_dirs(ref.parent_path());
  std::ofstream out(ref, std::ios::binary | std::ios::trunc);
  out << commit;  // no newline, as huggingface_hub writes it
  if (!out) throw IoError("[hub] cannot write " + ref.string());
}

bool RepoCache::has_file(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::is_regular_file(snapshot(commit) / file, ec);  // follows the symlink
}

bool RepoCache::known_missing(const std::string& commit, const std::string& file) const {
  std::error_code ec;
  return fs::exists(root_ / ".no_exist" / commit / file, ec);
}

// Best effort: the marker only saves a request next time, and a read-only
// cache must not turn a complete model into an error.
void RepoCache::mark_missing(const std::string& commit, const std::string& file) const {
  fs::path p = root_ / ".no_exist" / commit / file;
  std::error_code ec;
  fs::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary);
}

void RepoCache::link(const std::string& commit, const std::string& file, const std::string& etag) const {
  fs::path dst = snapshot(commit) / file;
  fs::path target;
  const fs::path folders = fs::path(file).parent_path();
  for (auto it = folders.begin(); it != folders.end(); ++it) target /= "..";
  target = target / ".." / ".." / "blobs" / etag;
  make_dirs(dst.parent_path());
  std::error_code ec;
  if (fs::is_symlink(dst, ec) && fs::read_symlink(dst, ec) == target) return;
  fs::remove(dst, ec);
  fs::create_symlink(target, dst, ec);
  if (ec) throw IoError("[hub] cannot link " + dst.string() + " to " + target.string() + ": " + ec.message());
}

FileLock::FileLock(const fs::path& path) {
  make_dirs(path.parent_path());
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError("[hub] cannot open the lock " + path.string() + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    int e = errno;
    ::close(fd_);
    throw IoError("[hub] cannot lock " + path.string() + ": " + std::strerror(e));
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

bool is_commit_hash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_safe_repo_path(const std::string& file) {
  if (file.empty() || file.front() == '/' || file.find('\\') != std::string::npos) return false;
  std::stringstream parts(file);
  for (std::string part; std::getline(parts, part, '/');)
    if (part.empty() || part == "." || part == "..") return false;
  return file.back() != '/';
}

}  // namespace forge::hub
