// Jinja parser: tokens -> Template (ast.h), with jinja2's operator precedence.
// Unknown tags and unclosed blocks are TemplateErrors naming their line.
#pragma once
#include <memory>
#include <string>

#include "text/jinja/ast.h"

namespace forge::text::jinja {

// Nesting of blocks and expressions beyond this is refused (bounds recursion).
inline constexpr int kMaxParseDepth = 96;

std::unique_ptr<Template> parse(const std::string& source);

}  // namespace forge::text::jinja
