// The llama3_json tool-call syntax: see tool_calls_llama.h.
#include "chat_template/tool_calls_llama.h"

#include "chat_template/internal/tool_call_util.h"

namespace switchyard::chat_template {
namespace {

constexpr std::string_view kPythonTag = "<|python_tag|>";

std::optional<ToolCall> ParseCall(std::string_view json) {
  return internal::CallFromJson(json, "parameters", "arguments");
}

size_t SkipSpaces(std::string_view s, size_t i) {
  while (i < s.size() && internal::IsAsciiSpace(s[i])) ++i;
  return i;
}

// After a call: whitespace, at most one ';', whitespace.
size_t SkipSeparator(std::string_view s, size_t i) {
  i = SkipSpaces(s, i);
  if (i < s.size() && s[i] == ';') i = SkipSpaces(s, i + 1);
  return i;
}

// The stream reads the same grammar as Parse, from a buffer that only grows until a
// decision point: kStart (before the first call), kCalls (between or inside calls), and
// kText once the rest is content.
class LlamaStream final : public ToolCallStream {
 public:
  StreamDelta Feed(std::string_view delta) override {
    StreamDelta out;
    if (state_ == State::kText) {
      sink_.Add(delta, &out.content);
      return out;
    }
    buf_.append(delta);
    Advance(&out, /*final=*/false);
    return out;
  }

  StreamDelta Finish() override {
    StreamDelta out;
    if (state_ != State::kText) Advance(&out, /*final=*/true);
    if (state_ != State::kText) ToText(&out);  // an open object, or only a separator left
    return out;
  }

 private:
  enum class State { kStart, kCalls, kText };

  // Everything not yet let out becomes content: all of it before the first call, the
  // text from the current position after one.
  void ToText(StreamDelta* out) {
    sink_.Add(std::string_view(buf_).substr(calls_ == 0 ? 0 : pos_), &out->content);
    buf_.clear();
    state_ = State::kText;
  }

  void Advance(StreamDelta* out, bool final) {
    if (state_ == State::kStart) {
      const size_t i = SkipSpaces(buf_, 0);
      const std::string_view rest = std::string_view(buf_).substr(i);
      if (!final && rest.size() < kPythonTag.size() && kPythonTag.starts_with(rest)) return;
      pos_ = rest.starts_with(kPythonTag) ? SkipSpaces(buf_, i + kPythonTag.size()) : i;
      state_ = State::kCalls;
    }
    while (state_ == State::kCalls) {
      if (calls_ == 0) pos_ = SkipSpaces(buf_, pos_);
      if (after_call_) {
        // The separator may continue in the next delta.
        const size_t next = SkipSeparator(buf_, 0);
        if (next >= buf_.size() && !final) return;
        pos_ = next;
        after_call_ = false;
      }
      if (pos_ >= buf_.size()) return;  // wait for more (Finish decides)
      if (buf_[pos_] != '{') return ToText(out);
      const size_t len = scanner_.Scan(std::string_view(buf_).substr(pos_));
      if (len == 0) return;  // the object is still open
      auto call = ParseCall(std::string_view(buf_).substr(pos_, len));
      if (!call) return ToText(out);
      out->tool_calls.push_back(std::move(*call));
      ++calls_;
      scanner_ = internal::ObjectScanner();
      buf_.erase(0, pos_ + len);
      pos_ = 0;
      after_call_ = true;
    }
  }

  State state_ = State::kStart;
  std::string buf_;
  size_t pos_ = 0;  // where the next call should start
  size_t calls_ = 0;
  bool after_call_ = false;  // buf_ starts right after a call
  internal::ObjectScanner scanner_;
  internal::ContentSink sink_;
};

class LlamaParser final : public ToolCallParser {
 public:
  ToolCallFamily family() const override { return ToolCallFamily::kLlama3Json; }

  ParsedOutput Parse(std::string_view text) const override {
    ParsedOutput out;
    size_t i = SkipSpaces(text, 0);
    if (text.substr(i).starts_with(kPythonTag)) i = SkipSpaces(text, i + kPythonTag.size());
    while (i < text.size() && text[i] == '{') {
      internal::ObjectScanner scanner;
      const size_t len = scanner.Scan(text.substr(i));
      if (len == 0) break;
      auto call = ParseCall(text.substr(i, len));
      if (!call) break;
      out.tool_calls.push_back(std::move(*call));
      i = SkipSeparator(text, i + len);
    }
    internal::ContentSink sink;
    sink.Add(out.tool_calls.empty() ? text : text.substr(i), &out.content);
    return out;
  }

  std::unique_ptr<ToolCallStream> NewStream() const override {
    return std::make_unique<LlamaStream>();
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeLlama3JsonToolCallParser() {
  return std::make_unique<LlamaParser>();
}

bool Llama3JsonTemplateMatches(std::string_view chat_template) {
  if (chat_template.find(kPythonTag) != std::string_view::npos) return true;
  return chat_template.find("<|start_header_id|>") != std::string_view::npos &&
         chat_template.find("\"parameters\"") != std::string_view::npos;
}

}  // namespace switchyard::chat_template
