// OpenAiReply: a call's answer in OpenAI's shapes (conversation/reply.h) — chat.completion or
// text_completion, a stream's chunks (the role chunk, content deltas, the tool calls and
// finish chunk, the usage chunk when asked for, [DONE]), and OpenAI's error shape with the
// front's codes (model_not_found, context_length_exceeded, invalid_session_id,
// session_busy, model_mismatch).
//
// Thread-safety: as Reply.
#pragma once

#include <memory>
#include <string>

#include "frontends/conversation_names.h"
#include "frontends/openai/openai_request.h"
#include "frontends/openai/openai_response.h"

namespace switchyard::frontends::openai {

class OpenAiReply : public Reply {
 public:
  // `chat`: /v1/chat/completions (else /v1/completions); `model`: as the request named it;
  // `include_usage`: stream_options.include_usage.
  OpenAiReply(bool chat, std::string model, bool include_usage)
      : model_(std::move(model)), include_usage_(include_usage) {
    head_.chat = chat;
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
  Response Compose(const Answer& answer) const;

  std::string model_;  // as requested
  bool include_usage_;
  CallHead call_;
  Response head_;
};

// An error response in OpenAI's shape.
http::HttpResponse ErrorResponse(int status, const std::string& message, const std::string& type,
                                 const std::string& code = "", const std::string& param = "");

}  // namespace switchyard::frontends::openai
