// The JSON helpers of the Anthropic protocol (see anthropic_json.h).
#include "frontends/anthropic/anthropic_json.h"

namespace switchyard::frontends::anthropic::detail {

Json UsageJson(const Usage& u) {
  return {{"input_tokens", u.input_tokens},
          {"cache_creation_input_tokens", u.cache_creation_input_tokens},
          {"cache_read_input_tokens", u.cache_read_input_tokens},
          {"output_tokens", u.output_tokens}};
}

Json ToolInput(const ToolCall& call) {
  if (json::NestingDepth(call.arguments) > json::kMaxDepth)
    return Json::object();  // dump() recurses
  Json input = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : Json::object();
}

Json ErrorBody(const Error& e) {
  return {{"type", "error"}, {"error", {{"type", e.type}, {"message", e.message}}}};
}

}  // namespace switchyard::frontends::anthropic::detail
