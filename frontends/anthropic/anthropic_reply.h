// AnthropicReply: a call's answer in the Messages API's shapes (conversation/reply.h) — a
// message, a stream's events (message_start, content blocks, message_delta with the stop
// reason and usage, message_stop), and Anthropic's error shape; a session busy with another
// turn is a 409 invalid_request_error, an overloaded server 529 overloaded_error with
// retry-after.
//
// Thread-safety: as Reply.
#pragma once

#include <memory>
#include <string>

#include "frontends/anthropic/anthropic_response.h"
#include "frontends/anthropic/anthropic_stream.h"
#include "frontends/conversation_names.h"

namespace switchyard::frontends::anthropic {

class AnthropicReply : public Reply {
 public:
  // `model`: as the request named it; `thinking`: the request enabled thinking.
  AnthropicReply(std::string model, bool thinking) {
    head_.model = std::move(model);
    head_.thinking = thinking;
  }

  void SetHead(const CallHead& head) override;
  std::string ToolCallId(int index) const override;
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
  CallHead call_;
  MessageHead head_;
  std::unique_ptr<MessagesStream> stream_;
};

// An error response in Anthropic's shape (529 and 503 with retry-after).
http::HttpResponse ErrorResponse(int status, std::string_view message);

}  // namespace switchyard::frontends::anthropic
