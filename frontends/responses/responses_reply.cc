// A call's answer in the Responses API's shapes (see responses_reply.h).
#include "frontends/responses/responses_reply.h"

#include <nlohmann/json.hpp>

namespace switchyard::frontends::responses {

namespace {

std::string Short(const std::string& wf) { return wf.size() > 8 ? wf.substr(wf.size() - 8) : wf; }

// An upstream's stream of Responses events: the function_call items that
// response.output_item.added (or .done) carries (their name, by output_index) and the
// usage of the final response (response.completed, .incomplete or .failed).
class EventReader : public upstream::UpstreamStreamReader {
 protected:
  void Data(std::string_view payload) override {
    if (payload.find("\"function_call\"") == std::string_view::npos &&
        payload.find("\"output_tokens\"") == std::string_view::npos)
      return;  // text and the other events
    auto j = nlohmann::json::parse(payload, nullptr, false);
    const std::string type = upstream::UpstreamString(j, "type");
    if (type == "response.output_item.added" || type == "response.output_item.done") {
      auto item = j.find("item");
      if (item != j.end() && upstream::UpstreamString(*item, "type") == "function_call")
        Tool(upstream::UpstreamInt(j, "output_index", 0), upstream::UpstreamString(*item, "name"));
    } else if (type == "response.completed" || type == "response.incomplete" ||
               type == "response.failed") {
      auto response = j.find("response");
      auto usage = response != j.end() ? response->find("usage") : j.end();
      if (response != j.end() && usage != response->end()) {
        if (int64_t n = upstream::UpstreamInt(*usage, "output_tokens", -1); n >= 0) OutputTokens(n);
      }
    }
  }
};

}  // namespace

std::string ResponsesReply::ToolCallId(int index) const {
  return "call_" + Short(call_.workflow) + "_" + std::to_string(call_.turn) + "_" +
         std::to_string(index);
}

StoredResponse ResponsesReply::Final(const Answer& answer) const {
  StoredResponse r = head_;
  ApplyAnswer(answer, routes_, &r);
  return r;
}

void ResponsesReply::Commit(const Answer& answer, std::function<void(const Status&)> done) {
  if (!head_.store) return done(Status::OK());
  StoredResponse r = Final(answer);
  service_->PutDocumentAsync(tenant_, kDocumentKind, r.id, r.ToJson(), std::move(done));
}

http::HttpResponse ResponsesReply::Whole(const Answer& answer) {
  return http::JsonResponse(200, ResponseJson(Final(answer)));
}

http::HttpResponse ResponsesReply::Error(const Status& st, Stage stage) {
  if (stage == Stage::kTurn && st.code() == StatusCode::kAborted)
    return http::JsonResponse(409, ErrorJson(409, st.message(), "", "session_busy"));
  HttpError e = ErrorFromStatus(st);
  http::HttpResponse r = http::JsonResponse(e.http_status, e.body);
  if (e.http_status == 429 || e.http_status == 503) r.headers["retry-after"] = "1";
  return r;
}

std::string ResponsesReply::StreamStart() { return stream_.Start(head_); }

std::string ResponsesReply::StreamText(std::string_view delta) { return stream_.Text(delta); }

std::string ResponsesReply::StreamEnd(const Answer& answer) {
  std::string out;
  for (const ToolCall& call : answer.tool_calls) out += stream_.ToolCall(call);
  return out + stream_.Finish(Final(answer));
}

std::string ResponsesReply::StreamError(const Status& st) { return stream_.Fail(st); }

void ResponsesReply::ReadUpstreamAnswer(std::string_view body, std::vector<std::string>* tools,
                                        int64_t* output_tokens) const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  *output_tokens = 0;
  if (!j.is_object()) return;
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto o = u->find("output_tokens");
    if (o != u->end() && o->is_number_integer()) *output_tokens = o->get<int64_t>();
  }
  auto output = j.find("output");
  if (output == j.end() || !output->is_array()) return;
  for (const auto& item : *output) {
    if (!item.is_object() || item.value("type", "") != "function_call") continue;
    auto name = item.find("name");
    tools->push_back(name != item.end() && name->is_string() ? name->get<std::string>() : "tool");
  }
}

std::unique_ptr<upstream::UpstreamStreamReader> ResponsesReply::NewUpstreamStreamReader() const {
  return std::make_unique<EventReader>();
}

}  // namespace switchyard::frontends::responses
