// The text rewrites @huggingface/jinja applies before tokenizing (internal to chat_template).
//
// Preprocess() drops one trailing newline, applies lstrip_blocks and trim_blocks exactly as
// the reference's regular expressions do, and removes {% generation %} markers. The result
// keeps, for every byte, the offset of the source byte it came from, so that errors can
// name the line of the original template. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chat_template/internal/error.h"

namespace switchyard::chat_template::internal {

struct MappedText {
  std::string text;
  std::vector<uint32_t> origin;  // origin[i]: offset in the source of text[i]
};

MappedText Preprocess(std::string_view source);

// Line and column of source offsets (the offset may equal the source size: its end).
class SourceIndex {
 public:
  explicit SourceIndex(std::string_view source);
  Pos At(size_t offset) const;

 private:
  std::string_view source_;
  std::vector<size_t> line_starts_;
};

}  // namespace switchyard::chat_template::internal
