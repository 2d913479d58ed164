// AnthropicFront's requests (see anthropic_front.h): parsed into a FrontRequest for the
// core, or counted.
#include "frontends/anthropic/anthropic_front.h"

#include <memory>

#include "base/logging.h"
#include "frontends/anthropic/anthropic_protocol.h"
#include "frontends/anthropic/anthropic_reply.h"
#include "frontends/openai/openai_headers.h"

namespace switchyard::frontends {

namespace an = anthropic;

namespace {

constexpr std::string_view kMessages = "/v1/messages", kCount = "/v1/messages/count_tokens";

http::HttpResponse AnthropicErrorResponse(const Status& st) {
  an::Error e = an::ErrorFromStatus(st);
  return an::ErrorResponse(e.http_status, e.message);
}

// The call's FrontRequest: its conversation, session and hints.
Result<FrontRequest> RequestOf(const http::HttpRequest& req, const std::string& tenant,
                               an::MessagesRequest& r, int64_t now_ms) {
  FrontRequest f;
  f.front = "anthropic";
  f.tenant = tenant;
  f.stream = r.stream;
  an::SessionKey key = an::SessionKeyOf(an::ParseHeaders(req.headers), r);
  f.session_id = key.Key();
  f.session_is_user = key.from_user;
  if (!key.agent_id.empty()) f.parent_session = key.session_id;  // a sub-agent
  f.retain_ms = an::RetentionMs(r.cache_breakpoints);
  if (std::string v = req.Header("x-switchyard-deadline"); !v.empty()) {
    SY_ASSIGN_OR_RETURN(f.deadline_ms, openai::ParseDeadline(v, now_ms));
  }
  if (std::string v = req.Header("x-switchyard-priority"); !v.empty()) {
    SY_ASSIGN_OR_RETURN(f.priority, openai::ParsePriority(v));
  }
  f.max_tokens = r.conversation.sampling.max_tokens;
  f.conv = std::move(r.conversation);
  return f;
}

}  // namespace

bool AnthropicFront::Serves(std::string_view path) { return path == kMessages || path == kCount; }

http::HttpResponse AnthropicFront::Error(int status, const std::string& message) {
  return an::ErrorResponse(status, message);
}

void AnthropicFront::Handle(const http::HttpRequest& req, const std::string& tenant,
                            Respond respond) {
  if (req.method != "POST") return respond(Error(405, "use POST"));
  const bool count = req.path() == kCount;
  if (count && core_->proxy() && !core_->translates())
    return core_->ForwardAsIs(req, std::move(respond));
  auto parsed = count ? an::ParseCountTokens(req.body) : an::ParseMessages(req.body);
  if (!parsed.ok()) return respond(AnthropicErrorResponse(parsed.status()));
  an::MessagesRequest& r = *parsed;
  const std::string ignored =
      an::IgnoredHeaderValue(an::IgnoredOf(an::ParseHeaders(req.headers), r));
  if (!ignored.empty())
    Log(LogLevel::kDebug, "anthropic front: fields accepted and not honoured",
        LogKeys().With("ignored", ignored));
  const bool thinking = r.thinking.type == an::Thinking::Type::kEnabled ||
                        r.thinking.type == an::Thinking::Type::kAdaptive;
  const std::string model = r.conversation.model;
  auto f = RequestOf(req, tenant, r, core_->clock()->Now().millis());
  if (!f.ok()) return respond(AnthropicErrorResponse(f.status()));
  Respond answer = [ignored, respond = std::move(respond)](http::HttpResponse resp) {
    if (!ignored.empty()) resp.headers["x-switchyard-ignored"] = ignored;
    respond(std::move(resp));
  };
  if (count) {
    auto n = core_->CountTokens(std::move(*f));
    if (!n.ok()) return answer(AnthropicErrorResponse(n.status()));
    return answer(http::HttpResponse{200, "application/json", {}, an::CountTokensJson(*n)});
  }
  if (core_->proxy()) f->original = req;
  core_->Serve(std::move(*f), std::make_unique<an::AnthropicReply>(model, thinking),
               std::move(answer));
}

}  // namespace switchyard::frontends
