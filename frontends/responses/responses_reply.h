// ResponsesReply: a call's answer in the Responses API's shapes (conversation/reply.h) — the
// response object, a stream's events (response.created ... response.completed), OpenAI's
// error shape — and, for a request with `store`, the response made durable (the service's
// documents, kind "response") before it goes out, so that a request chaining on it with
// previous_response_id finds it.
//
// Thread-safety: as Reply.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontends/conversation_names.h"
#include "frontends/responses/responses_object.h"
#include "frontends/responses/responses_stream.h"
#include "service/service.h"

namespace switchyard::frontends::responses {

// The document kind stored responses are kept under.
inline constexpr char kDocumentKind[] = "response";

class ResponsesReply : public Reply {
 public:
  // `head`: NewResponse's; `routes`: the request's; `service` and `tenant`: where a stored
  // response goes (the service outlives the reply).
  ResponsesReply(StoredResponse head, std::vector<ToolRoute> routes, service::Service* service,
                 std::string tenant)
      : head_(std::move(head)),
        routes_(routes),
        stream_(std::move(routes)),
        service_(service),
        tenant_(std::move(tenant)) {}

  void SetHead(const CallHead& head) override { call_ = head; }
  std::string ToolCallId(int index) const override;
  void Commit(const Answer& answer, std::function<void(const Status&)> done) override;
  http::HttpResponse Whole(const Answer& answer) override;
  http::HttpResponse Error(const Status& st, Stage stage) override;
  std::string StreamStart() override;
  std::string StreamText(std::string_view delta) override;
  std::string StreamEnd(const Answer& answer) override;
  std::string StreamError(const Status& st) override;
  void ReadUpstreamAnswer(std::string_view body, std::vector<std::string>* tools,
                          int64_t* output_tokens) const override;
  std::unique_ptr<upstream::UpstreamStreamReader> NewUpstreamStreamReader() const override;

 private:
  StoredResponse Final(const Answer& answer) const;

  StoredResponse head_;
  std::vector<ToolRoute> routes_;
  ResponsesStream stream_;
  service::Service* service_;
  std::string tenant_;
  CallHead call_;
};

}  // namespace switchyard::frontends::responses
