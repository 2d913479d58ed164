// The shared pieces of a Chat Completions answer (see chat_json.h).
#include "conversation/chat_json.h"

namespace switchyard::conversation::translate::detail {

using Json = nlohmann::json;

const Json* Field(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string String(const Json& j, std::string_view key) {
  const Json* v = Field(j, key);
  return v && v->is_string() ? v->get<std::string>() : "";
}

void ReadCallDelta(const Json& call, ToolCall* out) {
  if (out->id.empty()) out->id = String(call, "id");
  const Json* fn = Field(call, "function");
  if (!fn) return;
  if (out->name.empty()) out->name = String(*fn, "name");
  const Json* args = Field(*fn, "arguments");
  if (args && args->is_string()) {
    out->arguments += args->get<std::string>();
  } else if (args && args->is_object()) {
    out->arguments += args->dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

void ReadEnd(const Json& choice, Answer* a) {
  const std::string reason = String(choice, "finish_reason");
  const std::string stop = String(choice, "stop_reason");
  if (reason == "length") {
    a->end = Answer::End::kLength;
  } else if (reason == "tool_calls" || reason == "function_call") {
    a->end = Answer::End::kToolCalls;
  } else if (reason == "stop" && !stop.empty()) {
    a->end = Answer::End::kStopSequence;
    a->stop_sequence = stop;
  } else {
    a->end = Answer::End::kStop;
  }
  if (!a->tool_calls.empty()) a->end = Answer::End::kToolCalls;
}

void ReadUsage(const Json& j, Answer* a) {
  const Json* u = Field(j, "usage");
  if (!u || !u->is_object()) return;
  auto count = [](const Json& o, std::string_view key) -> int64_t {
    const Json* v = Field(o, key);
    return v && v->is_number_integer() ? v->get<int64_t>() : 0;
  };
  a->prompt_tokens = count(*u, "prompt_tokens");
  a->completion_tokens = count(*u, "completion_tokens");
  if (const Json* d = Field(*u, "prompt_tokens_details"); d && d->is_object())
    a->cached_tokens = count(*d, "cached_tokens");
}

}  // namespace switchyard::conversation::translate::detail
