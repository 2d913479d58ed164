// The hermes tool-call syntax: see tool_calls_hermes.h.
#include "chat_template/tool_calls_hermes.h"

#include "chat_template/internal/tool_call_util.h"

namespace switchyard::chat_template {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

std::optional<ToolCall> ParseBody(std::string_view body) {
  return internal::CallFromJson(body, "arguments", "parameters");
}

class HermesStream final : public ToolCallStream {
 public:
  StreamDelta Feed(std::string_view delta) override {
    StreamDelta out;
    buf_.append(delta);
    while (in_call_ ? TakeCall(&out) : TakeText(&out)) {
    }
    return out;
  }

  StreamDelta Finish() override {
    StreamDelta out;
    if (in_call_) {
      sink_.Add(std::string(kOpen) + buf_, &out.content);
    } else {
      sink_.Add(buf_, &out.content);
    }
    buf_.clear();
    in_call_ = false;
    return out;
  }

 private:
  // Outside a call: lets out text up to a marker (or up to what may begin one).
  bool TakeText(StreamDelta* out) {
    const size_t open = buf_.find(kOpen);
    if (open == std::string::npos) {
      const size_t keep = internal::HeldPrefix(buf_, kOpen);
      sink_.Add(std::string_view(buf_).substr(0, buf_.size() - keep), &out->content);
      buf_.erase(0, buf_.size() - keep);
      return false;
    }
    sink_.Add(std::string_view(buf_).substr(0, open), &out->content);
    buf_.erase(0, open + kOpen.size());
    in_call_ = true;
    scanned_ = 0;
    return true;
  }

  // Inside a call: waits for the closing tag, then decides.
  bool TakeCall(StreamDelta* out) {
    const size_t from = scanned_ >= kClose.size() ? scanned_ - kClose.size() + 1 : 0;
    const size_t close = buf_.find(kClose, from);
    if (close == std::string::npos) {
      scanned_ = buf_.size();
      return false;
    }
    if (auto call = ParseBody(std::string_view(buf_).substr(0, close))) {
      out->tool_calls.push_back(std::move(*call));
    } else {
      sink_.Add(std::string(kOpen) + buf_.substr(0, close + kClose.size()), &out->content);
    }
    buf_.erase(0, close + kClose.size());
    in_call_ = false;
    return true;
  }

  std::string buf_;
  bool in_call_ = false;
  size_t scanned_ = 0;  // bytes of an open call's body already searched for the close tag
  internal::ContentSink sink_;
};

class HermesParser final : public ToolCallParser {
 public:
  ToolCallFamily family() const override { return ToolCallFamily::kHermes; }

  ParsedOutput Parse(std::string_view text) const override {
    ParsedOutput out;
    internal::ContentSink sink;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t open = text.find(kOpen, pos);
      const size_t close = open == text.npos ? text.npos : text.find(kClose, open + kOpen.size());
      if (close == text.npos) break;
      const size_t end = close + kClose.size();
      if (auto call = ParseBody(text.substr(open + kOpen.size(), close - open - kOpen.size()))) {
        sink.Add(text.substr(pos, open - pos), &out.content);
        out.tool_calls.push_back(std::move(*call));
      } else {
        sink.Add(text.substr(pos, end - pos), &out.content);
      }
      pos = end;
    }
    sink.Add(text.substr(pos), &out.content);
    return out;
  }

  std::unique_ptr<ToolCallStream> NewStream() const override {
    return std::make_unique<HermesStream>();
  }
};

}  // namespace

std::unique_ptr<ToolCallParser> MakeHermesToolCallParser() {
  return std::make_unique<HermesParser>();
}

bool HermesTemplateMatches(std::string_view chat_template) {
  return chat_template.find(kOpen) != std::string_view::npos;
}

}  // namespace switchyard::chat_template
