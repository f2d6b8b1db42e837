// Post-processors (tokenizer.json "post_processor") for a single sequence:
// TemplateProcessing's "single" template (e.g. Llama's BOS), also the form
// BertProcessing / RobertaProcessing take; ByteLevel only trims offsets, so it
// changes no ids. A Sequence applies its templates in order.
#pragma once
#include <cstdint>
#include <vector>

namespace forge::text {

struct TemplatePiece {
  bool sequence = false;           // the encoded text itself
  std::vector<std::uint32_t> ids;  // otherwise: these special-token ids
};
using Template = std::vector<TemplatePiece>;

inline std::vector<std::uint32_t> apply_templates(const std::vector<Template>& templates,
                                                  std::vector<std::uint32_t> ids) {
  for (const Template& t : templates) {
    std::vector<std::uint32_t> out;
    out.reserve(ids.size() + 4);
    for (const TemplatePiece& p : t) {
      const auto& src = p.sequence ? ids : p.ids;
      out.insert(out.end(), src.begin(), src.end());
    }
    ids = std::move(out);
  }
  return ids;
}

}  // namespace forge::text
