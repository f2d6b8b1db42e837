#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "forge/error.h"

namespace forge::io {

MappedFile::MappedFile(const std::filesystem::path& path, const std::string& component) {
  auto fail = [&](const char* what) {
    return IoError("[" + component + "] cannot " + what + " " + path.string() + ": " + std::strerror(errno));
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw fail("open");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    IoError e = fail("stat");
    ::close(fd);
    throw e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError("[" + component + "] " + path.string() + " is not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    addr_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr_ == MAP_FAILED) {
      addr_ = nullptr;
      IoError e = fail("map");
      ::close(fd);
      throw e;
    }
  }
  ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
  if (addr_) ::munmap(addr_, size_);
}

}  // namespace forge::io
