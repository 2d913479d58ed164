// String operations with the reference's exact results (internal to chat_template).
//
// Each mirrors what @huggingface/jinja does with a JavaScript string: title() upper-cases
// an ASCII letter or digit after a non-word character and leaves the rest alone;
// capitalize() upper-cases only the first character; split() follows Python's str.split;
// replace() replaces non-overlapping occurrences left to right (an empty pattern matches
// between every two characters and at both ends). Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace switchyard::chat_template::internal {

std::string TitleCase(std::string_view s);
std::string Capitalize(std::string_view s);
// The indent filter: `indent` before every line but the first (unless first) and blank
// lines (unless blank). Throws TemplateError past max_bytes (as ReplaceString).
std::string IndentLines(std::string_view s, std::string_view indent, bool first, bool blank,
                        size_t max_bytes);
// sep nullopt: runs of non-whitespace. maxsplit < 0: no limit. sep must not be empty.
std::vector<std::string> SplitString(std::string_view s, const std::optional<std::string>& sep,
                                     double maxsplit);
// count < 0 (or nullopt): every occurrence.
std::string ReplaceString(std::string_view s, std::string_view from, std::string_view to,
                          std::optional<double> count, size_t max_bytes);
// HTML escaping of & < > " ' (the escape filter, an extension).
std::string HtmlEscape(std::string_view s);

}  // namespace switchyard::chat_template::internal
