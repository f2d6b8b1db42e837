// Streams the file through OpenSSL's EVP digests in 1 MiB reads.
#include "hub/hub_hash.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "forge/error.h"

namespace forge::hub {

namespace {

using MdCtx = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string digest_file(const std::filesystem::path& path, const EVP_MD* md, const std::string& prefix) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("[hub] cannot read " + path.string() + " to check its checksum");
  MdCtx ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), md, nullptr) != 1) throw IoError("[hub] cannot start a digest");
  EVP_DigestUpdate(ctx.get(), prefix.data(), prefix.size());
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw IoError("[hub] read error in " + path.string());
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (unsigned int i = 0; i < len; ++i) {
    s += hex[out[i] >> 4];
    s += hex[out[i] & 15];
  }
  return s;
}

}  // namespace

std::string sha256_file(const std::filesystem::path& path) { return digest_file(path, EVP_sha256(), ""); }

std::string git_blob_sha1_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (ec) throw IoError("[hub] cannot read " + path.string() + " to check its checksum: " + ec.message());
  std::string prefix = "blob " + std::to_string(size);
  prefix.push_back('\0');
  return digest_file(path, EVP_sha1(), prefix);
}

}  // namespace forge::hub
