// Pieces the tool-call parsers share (internal to chat_template).
//
// ContentSink applies the content rule of tool_calls.h (whitespace-only content is empty)
// to text that arrives in pieces: whitespace before the first other character is held
// until that character arrives, and dropped at the end. ObjectScanner finds where a JSON
// object that starts at '{' ends, resumably, honouring strings and escapes. CallFromJson
// reads {"name": ..., <args_key>: {...}} into a ToolCall. HeldPrefix is the length of the
// longest end of a text that begins a marker. Used by one parser or stream at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "chat_template/tool_calls.h"

namespace switchyard::chat_template::internal {

class ContentSink {
 public:
  // Adds content; what may be shown now is appended to *out.
  void Add(std::string_view text, std::string* out);
  bool started() const { return started_; }

 private:
  bool started_ = false;  // a non-whitespace character has been let out
  std::string held_;
};

class ObjectScanner {
 public:
  // Scans text from where the last call stopped (text[0] must be '{' and earlier bytes
  // must be unchanged); returns the length of the object once it closes, 0 while open.
  size_t Scan(std::string_view text);

 private:
  size_t pos_ = 0;
  int depth_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
};

// A call from a JSON object with a non-empty string "name" and an object under one of the
// argument keys (a string holding a JSON object is accepted too; no key means {}).
std::optional<ToolCall> CallFromJson(std::string_view json, std::string_view args_key,
                                     std::string_view alt_args_key);

// How many trailing bytes of `text` are a proper prefix of `marker`.
size_t HeldPrefix(std::string_view text, std::string_view marker);
bool IsAsciiSpace(char c);

}  // namespace switchyard::chat_template::internal
