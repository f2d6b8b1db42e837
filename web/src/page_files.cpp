#include "page_files.h"

#include <emscripten.h>

#include <algorithm>
#include <cstdlib>

#include "forge/error.h"

namespace forge::web {

namespace {

// The Blob's size in bytes, or -1 when the page lists no file at `path`.
EM_JS(double, forge_js_file_size, (const char* path), {
  const f = Module.forgeFiles && Module.forgeFiles.get(UTF8ToString(path));
  return f ? f.size : -1;
});

// Copies bytes [offset, offset + n) of the Blob at `path` to dst in the heap;
// returns null, or why it could not (malloc'ed: the caller frees it).
EM_ASYNC_JS(char*, forge_js_file_read, (const char* path, double offset, void* dst, double n), {
  let why;
  try {
    const f = Module.forgeFiles.get(UTF8ToString(path));
    const data = new Uint8Array(await f.slice(offset, offset + n).arrayBuffer());
    if (data.length !== n) why = `got ${data.length} bytes`;
    else HEAPU8.set(data, dst);  // HEAPU8 read after the await: the heap may have grown
  } catch (e) {
    why = String(e.message || e);
  }
  if (why === undefined) return 0;
  const size = lengthBytesUTF8(why) + 1;
  const p = _malloc(size);
  stringToUTF8(why, p, size);
  return p;
});

// One read of the page's file at most this large: a tensor comes in pieces,
// so no JavaScript buffer of a whole embedding table is needed at once.
constexpr uint64_t kReadPiece = uint64_t(64) << 20;

ByteSource page_file(const std::filesystem::path& path, double size) {
  ByteSource s;
  s.size = uint64_t(size);
  s.read = [path = path.string()](uint64_t offset, std::span<std::byte> out) {
    for (uint64_t done = 0; done < out.size();) {
      const uint64_t n = std::min<uint64_t>(kReadPiece, out.size() - done);
      if (char* failed = forge_js_file_read(path.c_str(), double(offset + done), out.data() + done, double(n))) {
        const std::string why = failed;
        std::free(failed);
        throw IoError("[web] cannot read bytes [" + std::to_string(offset + done) + ", " +
                      std::to_string(offset + done + n) + ") of " + path + ": " + why);
      }
      done += n;
    }
  };
  return s;
}

}  // namespace

SafetensorsFiles page_safetensors_files() {
  const SafetensorsFiles disk = SafetensorsFiles::on_disk();
  return {[disk](const std::filesystem::path& p) { return forge_js_file_size(p.c_str()) >= 0 || disk.exists(p); },
          [disk](const std::filesystem::path& p) {
            const double size = forge_js_file_size(p.c_str());
            if (size < 0) return disk.open(p);
            return SafetensorsFile::from_source(page_file(p, size), p.string());
          }};
}

}  // namespace forge::web
