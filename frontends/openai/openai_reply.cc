// A call's answer in OpenAI's shapes (see openai_reply.h).
#include "frontends/openai/openai_reply.h"

#include <nlohmann/json.hpp>

namespace switchyard::frontends::openai {

namespace {

std::string Short(const std::string& wf) { return wf.size() > 8 ? wf.substr(wf.size() - 8) : wf; }

const char* FinishReason(Answer::End end) {
  switch (end) {
    case Answer::End::kStop:
    case Answer::End::kStopSequence:
      return "stop";
    case Answer::End::kLength:
      return "length";
    case Answer::End::kToolCalls:
      return "tool_calls";
  }
  return "stop";
}

// The names of the tool calls in an upstream's whole chat answer (choices[0].message).
std::vector<std::string> ToolCallNames(const nlohmann::json& answer) {
  std::vector<std::string> names;
  if (!answer.is_object()) return names;
  auto choices = answer.find("choices");
  if (choices == answer.end() || !choices->is_array() || choices->empty()) return names;
  const auto& first = (*choices)[0];
  if (!first.is_object()) return names;
  auto message = first.find("message");
  if (message == first.end() || !message->is_object()) return names;
  auto calls = message->find("tool_calls");
  if (calls == message->end() || !calls->is_array()) return names;
  for (const auto& t : *calls) {
    if (!t.is_object() || !t.contains("function") || !t["function"].is_object()) continue;
    const auto& f = t["function"];
    names.push_back(f.contains("name") && f["name"].is_string() ? f["name"].get<std::string>()
                                                                : "tool");
  }
  return names;
}

// An upstream's stream of chunks: the tool calls in choice 0's deltas (each named in the
// delta that opens it, by its index) and the usage chunk's completion_tokens.
class ChunkReader : public upstream::UpstreamStreamReader {
 protected:
  void Data(std::string_view payload) override {
    if (payload.find("\"tool_calls\"") == std::string_view::npos &&
        payload.find("\"completion_tokens\"") == std::string_view::npos)
      return;  // a chunk of text: most of them
    auto j = nlohmann::json::parse(payload, nullptr, false);
    if (!j.is_object()) return;
    if (auto usage = j.find("usage"); usage != j.end()) {
      if (int64_t n = upstream::UpstreamInt(*usage, "completion_tokens", -1); n >= 0)
        OutputTokens(n);
    }
    auto choices = j.find("choices");
    if (choices == j.end() || !choices->is_array()) return;
    for (const auto& choice : *choices) {
      if (!choice.is_object() || upstream::UpstreamInt(choice, "index", 0) != 0) continue;
      auto delta = choice.find("delta");
      if (delta == choice.end() || !delta->is_object()) continue;
      auto calls = delta->find("tool_calls");
      if (calls == delta->end() || !calls->is_array()) continue;
      for (size_t i = 0; i < calls->size(); ++i) {
        const auto& call = (*calls)[i];
        if (!call.is_object()) continue;
        auto f = call.find("function");
        Tool(upstream::UpstreamInt(call, "index", static_cast<int64_t>(i)),
             f != call.end() ? upstream::UpstreamString(*f, "name") : "");
      }
    }
  }
};

}  // namespace

http::HttpResponse ErrorResponse(int status, const std::string& message, const std::string& type,
                                 const std::string& code, const std::string& param) {
  openai::Error e;
  e.http_status = status;
  e.message = message;
  e.type = type;
  e.code = code;
  e.param = param;
  return http::JsonResponse(status, ErrorJson(e));
}

void OpenAiReply::SetHead(const CallHead& head) {
  call_ = head;
  head_.id = (head_.chat ? "chatcmpl-" : "cmpl-") + head.workflow + "-" + head.node;
  head_.created = head.created;
  head_.model = head.model;
  head_.system_fingerprint = head.engine;
}

std::string OpenAiReply::ToolCallId(int index) const {
  return "call_" + Short(call_.workflow) + "_" + std::to_string(call_.turn) +
         (index > 0 ? "_" + std::to_string(index) : "");
}

Response OpenAiReply::Compose(const Answer& a) const {
  Response r = head_;
  r.choice.text = a.text;
  r.choice.tool_calls = a.tool_calls;
  r.choice.finish_reason = FinishReason(a.end);
  r.usage.prompt_tokens = a.prompt_tokens;
  r.usage.completion_tokens = a.completion_tokens;
  r.usage.cached_tokens = a.cached_tokens;
  return r;
}

http::HttpResponse OpenAiReply::Whole(const Answer& answer) {
  return http::JsonResponse(200, ResponseJson(Compose(answer)));
}

http::HttpResponse OpenAiReply::Error(const Status& st, Stage stage) {
  const std::string type = "invalid_request_error";
  if (stage == Stage::kTurn) {  // the session refused the turn
    switch (st.code()) {
      case StatusCode::kInvalidArgument:
        return ErrorResponse(400, st.message(), type, "invalid_session_id", "x-session-id");
      case StatusCode::kAborted:
        return ErrorResponse(409, st.message(), type, "session_busy");
      default:
        return ErrorResponse(400, st.message() + "; this request names '" + model_ + "'", type,
                             "model_mismatch");
    }
  }
  openai::Error e = ErrorFromStatus(st);
  if (stage == Stage::kPrepare) {
    if (st.code() == StatusCode::kNotFound) e.code = "model_not_found", e.param = "model";
    if (st.message().find("exceed the model's context") != std::string::npos)
      e.code = "context_length_exceeded";
  }
  if (stage == Stage::kRun && e.http_status == 500) e.type = "server_error";
  http::HttpResponse r = http::JsonResponse(e.http_status, ErrorJson(e));
  if (stage == Stage::kRun && (e.http_status == 429 || e.http_status == 503))
    r.headers["retry-after"] = "1";
  return r;
}

std::string OpenAiReply::StreamStart() { return ChunkEvent(head_, "", /*first=*/true, ""); }

std::string OpenAiReply::StreamText(std::string_view delta) {
  return ChunkEvent(head_, std::string(delta), false, "");
}

std::string OpenAiReply::StreamEnd(const Answer& answer) {
  Response r = Compose(answer);
  std::string out;
  if (!r.choice.tool_calls.empty()) out += ChunkEvent(head_, "", false, "", &r.choice.tool_calls);
  out += ChunkEvent(head_, "", false, r.choice.finish_reason);
  if (include_usage_) out += UsageEvent(r);
  return out + kDoneEvent;
}

std::string OpenAiReply::StreamError(const Status& st) {
  openai::Error e = ErrorFromStatus(st);
  if (e.http_status == 500) e.type = "server_error";
  return "data: " + ErrorJson(e) + "\n\n" + kDoneEvent;
}

void OpenAiReply::ReadUpstreamAnswer(std::string_view body, std::vector<std::string>* tools,
                                     int64_t* output_tokens) const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  *output_tokens = j.is_object() && j.contains("usage")
                       ? upstream::UpstreamInt(j["usage"], "completion_tokens", 0)
                       : 0;
  *tools = ToolCallNames(j);
}

std::unique_ptr<upstream::UpstreamStreamReader> OpenAiReply::NewUpstreamStreamReader() const {
  return std::make_unique<ChunkReader>();
}

}  // namespace switchyard::frontends::openai
