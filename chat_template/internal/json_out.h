// Values written as JSON the way the reference's tojson does (internal to chat_template).
//
// Keys stay in insertion order; without indent items are separated by ", " and keys by
// ": " (Python json.dumps defaults, which HF templates rely on); with indent, by "," and
// newlines; strings are escaped as JSON.stringify does (non-ASCII kept unless
// ensure_ascii, which escapes every code unit from U+007F as \uXXXX); floats with no
// fraction print as integers ("1", as JSON.stringify); undefined prints as null (or as
// "undefined" when printing a list or dict with {{ }}). Tuples, keyword arguments and
// functions cannot be written, as in the reference. sort_keys orders keys by UTF-16 code
// units (the reference uses the locale's collation; they agree on ASCII letters of one
// case, digits and most punctuation). Errors throw TemplateError. Pure; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "chat_template/internal/value.h"

namespace switchyard::chat_template::internal {

struct JsonFormat {
  int indent = 0;  // 0: one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool undefined_as_null = true;
  size_t max_bytes = SIZE_MAX;  // longer output is an error
};

std::string ToJson(const Value& v, const JsonFormat& format);
// JSON.stringify of one string.
std::string JsonQuote(std::string_view s);

}  // namespace switchyard::chat_template::internal
