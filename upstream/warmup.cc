#include "upstream/warmup.h"

#include <string>

namespace switchyard::upstream {
namespace {

using nlohmann::json;

Status Bad(const std::string& path, const std::string& what) {
  return Status::InvalidArgument("warm-up of " + path + ": " + what);
}

// One short, unstreamed, unstored answer.
void OneToken(json* body, const char* max_field) {
  for (const char* field : {"stream", "stream_options", "max_tokens", "max_completion_tokens",
                            "max_output_tokens", "n", "best_of", "echo", "store", "background"}) {
    body->erase(field);
  }
  (*body)[max_field] = 1;
  (*body)["stream"] = false;
}

json AssistantText(const std::string& text) {
  return json{{"role", "assistant"}, {"content", text}};
}

Status AppendChat(const WarmupPrefix& p, json* body) {
  auto it = body->find("messages");
  if (it == body->end() || !it->is_array()) return Bad(p.path, "`messages` is not an array");
  if (p.answer.is_string()) {
    it->push_back(AssistantText(p.answer.get<std::string>()));
  } else if (p.answer.is_object()) {
    json message = p.answer;
    if (!message.contains("role")) message["role"] = "assistant";
    it->push_back(std::move(message));
  } else {
    return Bad(p.path, "the answer is neither text nor an assistant message");
  }
  OneToken(body, "max_tokens");
  return Status::OK();
}

Status AppendMessages(const WarmupPrefix& p, json* body) {
  auto it = body->find("messages");
  if (it == body->end() || !it->is_array()) return Bad(p.path, "`messages` is not an array");
  if (p.answer.is_string() || p.answer.is_array()) {
    it->push_back(json{{"role", "assistant"}, {"content", p.answer}});
  } else if (p.answer.is_object() && p.answer.contains("content")) {
    json message = p.answer;
    message["role"] = "assistant";
    it->push_back(std::move(message));
  } else {
    return Bad(p.path, "the answer is neither text, content blocks nor an assistant message");
  }
  OneToken(body, "max_tokens");
  return Status::OK();
}

Status AppendResponses(const WarmupPrefix& p, json* body) {
  auto it = body->find("input");
  if (it == body->end() || !(it->is_string() || it->is_array())) {
    return Bad(p.path, "`input` is neither text nor an array of items");
  }
  if (it->is_string()) *it = json::array({json{{"role", "user"}, {"content", *it}}});
  if (p.answer.is_string()) {
    it->push_back(AssistantText(p.answer.get<std::string>()));
  } else if (p.answer.is_array()) {
    for (const json& item : p.answer) it->push_back(item);
  } else if (p.answer.is_object()) {
    it->push_back(p.answer);
  } else {
    return Bad(p.path, "the answer is neither text nor output items");
  }
  OneToken(body, "max_output_tokens");
  (*body)["store"] = false;
  return Status::OK();
}

Status AppendCompletion(const WarmupPrefix& p, json* body) {
  auto it = body->find("prompt");
  if (it == body->end() || !it->is_string()) return Bad(p.path, "`prompt` is not text");
  if (!p.answer.is_string()) return Bad(p.path, "the answer is not text");
  *it = it->get<std::string>() + p.answer.get<std::string>();
  OneToken(body, "max_tokens");
  return Status::OK();
}

}  // namespace

Result<UpstreamCall> MakeWarmup(const WarmupPrefix& prefix) {
  if (!prefix.request.is_object()) return Bad(prefix.path, "the request is not a JSON object");
  json body = prefix.request;
  // The route without its query (Claude Code calls /v1/messages?beta=true).
  const std::string route = prefix.path.substr(0, prefix.path.find('?'));
  Status status;
  if (route == "/v1/chat/completions") {
    status = AppendChat(prefix, &body);
  } else if (route == "/v1/messages") {
    status = AppendMessages(prefix, &body);
  } else if (route == "/v1/responses") {
    status = AppendResponses(prefix, &body);
  } else if (route == "/v1/completions") {
    status = AppendCompletion(prefix, &body);
  } else {
    return Status::InvalidArgument("warm-up of " + prefix.path +
                                   ": not a path a warm-up knows (/v1/chat/completions, "
                                   "/v1/messages, /v1/responses, /v1/completions)");
  }
  if (!status.ok()) return status;
  UpstreamCall call;
  call.kind = CallKind::kWarmup;
  call.method = "POST";
  call.path = prefix.path;
  call.body = body.dump();
  call.background = true;
  call.purpose = "warm-up of " + prefix.path;
  return call;
}

}  // namespace switchyard::upstream
