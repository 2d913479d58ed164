// Tool-call parsers: finding the calls a model wrote in its own syntax in generated text.
//
// One interface, one implementation per model family, chosen from a registry (by family,
// by name, by what the chat template contains, or by the Hugging Face model_type):
//   - hermes (Qwen2.5, Qwen3, Hermes): <tool_call>\n{"name": ..., "arguments": {...}}\n
//     </tool_call>, several in a row, text around them (tool_calls_hermes.h);
//   - llama3_json (Llama 3.1 / 3.2): the whole answer is {"name": ..., "parameters": {...}},
//     optionally after <|python_tag|>, several separated by ";" (tool_calls_llama.h);
//   - none: all text is content.
// A parser works one-shot (Parse) or on a stream of text deltas (NewStream). Text that is
// not a complete, valid call stays content, verbatim; content that is only whitespace is
// empty. Each family's header states its rules for malformed calls.
//
// Thread-safety: a ToolCallParser is immutable and may be shared between threads; a
// ToolCallStream belongs to one response and must not be used from two threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace switchyard::chat_template {

struct ToolCall {
  std::string name;
  std::string arguments_json;  // a JSON object, compact, keys in the order written

  friend bool operator==(const ToolCall&, const ToolCall&) = default;
};

struct ParsedOutput {
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// What a stream lets out after a delta: content safe to show now, and calls now complete.
struct StreamDelta {
  std::string content;
  std::vector<ToolCall> tool_calls;
};

// The streaming form. Content that could still turn out to be part of a call (a prefix of
// a call marker, the body of an open call) and leading whitespace are held back until
// they are decided. Feeding a text in any split and calling Finish yields, concatenated,
// exactly what Parse yields for the whole text.
class ToolCallStream {
 public:
  virtual ~ToolCallStream() = default;
  virtual StreamDelta Feed(std::string_view delta) = 0;
  // The end of the text: whatever is held back is decided (an unclosed call is content).
  virtual StreamDelta Finish() = 0;
};

enum class ToolCallFamily { kNone, kHermes, kLlama3Json };

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  virtual ToolCallFamily family() const = 0;
  virtual ParsedOutput Parse(std::string_view text) const = 0;
  virtual std::unique_ptr<ToolCallStream> NewStream() const = 0;
};

// A registered family: its name ("hermes", "llama3_json", "none"), the model_type values
// of config.json it serves, and whether a chat template is written for it.
struct ToolCallFamilyInfo {
  ToolCallFamily family;
  std::string_view name;
  std::vector<std::string_view> model_types;
  bool (*matches_template)(std::string_view chat_template);
  std::unique_ptr<ToolCallParser> (*make)();
};

// Every family, in the order detection tries them (none last).
const std::vector<ToolCallFamilyInfo>& ToolCallFamilies();
std::string_view ToolCallFamilyName(ToolCallFamily family);
Result<ToolCallFamily> ToolCallFamilyByName(std::string_view name);
// The first family whose template markers the chat template contains (hermes: it writes
// "<tool_call>"; llama3_json: "<|python_tag|>", or Llama 3 headers with a "parameters"
// call format); kNone when none does.
ToolCallFamily DetectToolCallFamily(std::string_view chat_template);
// The family of a Hugging Face model_type (qwen2, qwen3, ... -> hermes; llama ->
// llama3_json); kNone when unknown.
ToolCallFamily ToolCallFamilyForModelType(std::string_view model_type);
std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFamily family);

}  // namespace switchyard::chat_template
