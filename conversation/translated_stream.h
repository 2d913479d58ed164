// TranslatedStream: a Chat Completions upstream's streamed answer turned, as it comes, into
// the stream of the call's own front (Messages or Responses events), written by the call's
// Reply (conversation/reply.h): its start before anything else, each text delta as the
// upstream sends it, and an error event if the upstream fails. The answer's end (its tool
// calls, why it ended, its usage: Reply::StreamEnd) is the caller's to write, once the
// session took the answer; tool calls go out with it, whole.
//
// Ownership: the Reply outlives it. Thread-safety: not thread-safe; the caller serializes
// every call with the Reply's other uses.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "conversation/chat_stream.h"
#include "conversation/conversation.h"
#include "conversation/reply.h"

namespace switchyard::conversation::translate {

class TranslatedStream {
 public:
  explicit TranslatedStream(Reply* reply) : reply_(reply) {}

  // The client's bytes for the next piece of the upstream's body ("" when it completed no
  // text): the stream's start first; after an error event, that error, then nothing.
  std::string Feed(std::string_view bytes);
  // The upstream's body ended (`complete`: as the upstream meant it to). The client's last
  // bytes before the answer's end: the start if nothing came yet, a last event's text, and
  // the error event when there is no whole answer.
  std::string End(bool complete);
  // After End: the answer, or why there is none (the error already written).
  Result<Answer> answer() const;

 private:
  std::string Start();
  std::string Fail(const Status& st);

  Reply* reply_;
  ChatStreamReader reader_;
  bool started_ = false, failed_ = false;
  Status end_;  // End's verdict
};

}  // namespace switchyard::conversation::translate
