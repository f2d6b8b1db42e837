// Content checks for downloaded files: the hub names an LFS file by the sha256
// of its bytes and a regular git file by its git blob sha1.
#pragma once
#include <filesystem>
#include <string>

namespace forge::hub {

// Lower-case hex digests of a whole file; IoError when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
// sha1 over "blob <size>\0" followed by the bytes, as `git hash-object` does.
std::string git_blob_sha1_file(const std::filesystem::path& path);

}  // namespace forge::hub
