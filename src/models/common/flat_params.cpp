// flatten_params: pack the parameters' storages into pages, move them there,
// and describe each page's parameters as segments for adamw_flat.
#include "models/common/flat_params.h"

#include <algorithm>
#include <limits>
#include <map>

#include "gpu/runtime.h"

namespace forge {

namespace {

constexpr uint64_t kAlign = 256;  // WebGPU's storage offset alignment, so every parameter can be bound

uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

struct Place {
  const Tensor* any;  // a parameter in the storage
  uint64_t bytes;     // the storage's, rounded up to 4
  size_t page = 0;
  uint64_t at = 0;    // byte offset in the page
};

struct Segment {
  uint32_t begin, end, decay;
  size_t param;
};

}  // namespace

FlatParams flatten_params(const std::vector<NamedTensor>& params, const std::vector<bool>& decay,
                          const std::string& who) {
  FlatParams out;
  if (params.empty()) return out;
  const Device dev = params.front().value.device();
  for (const NamedTensor& p : params) {
    if (!p.value.defined()) throw ValueError(who + " parameter '" + p.name + "' is undefined");
    if (p.value.dtype() != DType::F32)
      throw DTypeError(who + " parameter '" + p.name + "' must be f32, got " + p.value.describe());
    if (!(p.value.device() == dev))
      throw DeviceError(who + " parameter '" + p.name + "' is " + p.value.describe() + ", the first is on " +
                        dev.name());
  }
  // Each storage once, in the order the parameters name them.
  std::vector<Place> places;
  std::map<const void*, size_t> place_of;
  for (const NamedTensor& p : params)
    if (p.value.numel() > 0 && place_of.emplace(p.value.storage_id(), places.size()).second)
      places.push_back({&p.value, round_up(p.value.storage_bytes(), 4)});

  // Pages of at most one binding, so a kernel binds a page whole.
  const uint64_t cap = dev.is_cpu() ? std::numeric_limits<uint64_t>::max()
                                    : std::max(kAlign, dev.runtime().binding_limit() / kAlign * kAlign);
  std::vector<uint64_t> page_bytes;
  for (Place& pl : places) {
    const uint64_t size = round_up(pl.bytes, kAlign);
    if (page_bytes.empty() || (page_bytes.back() > 0 && page_bytes.back() + size > cap)) page_bytes.push_back(0);
    pl.page = page_bytes.size() - 1;
    pl.at = page_bytes.back();
    page_bytes.back() += size;
  }
  for (uint64_t bytes : page_bytes) {
    if (bytes / 4 >= (uint64_t(1) << 32))
      throw ValueError(who + " " + std::to_string(bytes / 4) + " parameter elements in one flat buffer; at most 2^32");
    const int64_t n = int64_t(bytes / 4);
    FlatPage pg;
    pg.w = Tensor::zeros({n}, DType::F32, dev);
    pg.g = Tensor::zeros({n}, DType::F32, dev);
    pg.m = Tensor::zeros({n}, DType::F32, dev);
    pg.v = Tensor::zeros({n}, DType::F32, dev);
    out.pages.push_back(std::move(pg));
  }
  for (const Place& pl : places) pl.any->move_storage_into(out.pages[pl.page].w, pl.at);

  // Segments per page, from where each parameter now lies.
  std::vector<std::vector<Segment>> segs(out.pages.size());
  out.g.resize(params.size());
  out.m.resize(params.size());
  out.v.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& t = params[i].value;
    if (t.numel() == 0) {
      out.g[i] = Tensor::zeros(t.shape(), DType::F32, dev);
      out.m[i] = out.g[i].clone();
      out.v[i] = out.g[i].clone();
      continue;
    }
    const size_t page = places[place_of.at(t.storage_id())].page;
    const FlatPage& pg = out.pages[page];
    const uint64_t at = t.byte_offset() - pg.w.byte_offset();
    if (at % 4) throw ValueError(who + " parameter '" + params[i].name + "' lies at an unaligned byte offset");
    const int64_t begin = int64_t(at / 4), end = begin + t.numel();
    segs[page].push_back({uint32_t(begin), uint32_t(end), decay[i] ? 1u : 0u, i});
    out.g[i] = pg.g.slice_rows(begin, end).reshape(t.shape());
    out.m[i] = pg.m.slice_rows(begin, end).reshape(t.shape());
    out.v[i] = pg.v.slice_rows(begin, end).reshape(t.shape());
  }
  for (size_t p = 0; p < segs.size(); ++p) {
    std::sort(segs[p].begin(), segs[p].end(), [](const Segment& a, const Segment& b) { return a.begin < b.begin; });
    std::vector<uint32_t> table;
    for (size_t s = 0; s < segs[p].size(); ++s) {
      const Segment& sg = segs[p][s];
      if (s > 0 && sg.begin < segs[p][s - 1].end)
        throw ValueError(who + " parameters '" + params[segs[p][s - 1].param].name + "' and '" + params[sg.param].name +
                         "' share elements; each must be listed once");
      table.insert(table.end(), {sg.begin, sg.end, sg.decay});
      out.pages[p].names.push_back(params[sg.param].name);
    }
    out.pages[p].segments = Tensor::from_vector(table, {int64_t(segs[p].size()), 3}, dev);
  }
  return out;
}

}  // namespace forge
