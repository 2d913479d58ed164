// Tool-call parsers: the registry of families and the "none" family. See tool_calls.h.
#include "chat_template/tool_calls.h"

#include "chat_template/internal/tool_call_util.h"
#include "chat_template/tool_calls_hermes.h"
#include "chat_template/tool_calls_llama.h"

namespace switchyard::chat_template {
namespace {

// No tool-call syntax: everything is content.
class NoneStream final : public ToolCallStream {
 public:
  StreamDelta Feed(std::string_view delta) override {
    StreamDelta out;
    sink_.Add(delta, &out.content);
    return out;
  }
  StreamDelta Finish() override { return {}; }

 private:
  internal::ContentSink sink_;
};

class NoneParser final : public ToolCallParser {
 public:
  ToolCallFamily family() const override { return ToolCallFamily::kNone; }
  ParsedOutput Parse(std::string_view text) const override {
    ParsedOutput out;
    internal::ContentSink sink;
    sink.Add(text, &out.content);
    return out;
  }
  std::unique_ptr<ToolCallStream> NewStream() const override {
    return std::make_unique<NoneStream>();
  }
};

bool NeverMatches(std::string_view) { return false; }
std::unique_ptr<ToolCallParser> MakeNoneParser() { return std::make_unique<NoneParser>(); }

}  // namespace

const std::vector<ToolCallFamilyInfo>& ToolCallFamilies() {
  static const std::vector<ToolCallFamilyInfo> kFamilies = {
      {ToolCallFamily::kHermes,
       "hermes",
       {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"},
       HermesTemplateMatches,
       MakeHermesToolCallParser},
      {ToolCallFamily::kLlama3Json,
       "llama3_json",
       {"llama"},
       Llama3JsonTemplateMatches,
       MakeLlama3JsonToolCallParser},
      {ToolCallFamily::kNone, "none", {}, NeverMatches, MakeNoneParser},
  };
  return kFamilies;
}

std::string_view ToolCallFamilyName(ToolCallFamily family) {
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    if (f.family == family) return f.name;
  }
  return "none";
}

Result<ToolCallFamily> ToolCallFamilyByName(std::string_view name) {
  std::string known;
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    if (f.name == name) return f.family;
    known += (known.empty() ? "" : ", ") + std::string(f.name);
  }
  return Status::InvalidArgument("unknown tool-call family '" + std::string(name) +
                                 "' (known: " + known + ")");
}

ToolCallFamily DetectToolCallFamily(std::string_view chat_template) {
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    if (f.matches_template(chat_template)) return f.family;
  }
  return ToolCallFamily::kNone;
}

ToolCallFamily ToolCallFamilyForModelType(std::string_view model_type) {
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    for (std::string_view t : f.model_types) {
      if (t == model_type) return f.family;
    }
  }
  return ToolCallFamily::kNone;
}

std::unique_ptr<ToolCallParser> MakeToolCallParser(ToolCallFamily family) {
  for (const ToolCallFamilyInfo& f : ToolCallFamilies()) {
    if (f.family == family) return f.make();
  }
  return MakeNoneParser();
}

}  // namespace switchyard::chat_template
