// The conversation module's names as the fronts use them: the protocol-neutral call and
// answer (conversation/conversation.h), how a protocol writes its answer
// (conversation/reply.h), the upstream APIs proxy mode speaks (conversation/upstream_api.h)
// and the translation to and from Chat Completions (namespace translate). The fronts are
// written in these terms everywhere; declaring them here once keeps that code unqualified.
#pragma once

#include "conversation/conversation.h"
#include "conversation/reply.h"
#include "conversation/upstream_api.h"

namespace switchyard::conversation::translate {}

namespace switchyard::frontends {

using conversation::Answer;
using conversation::CallHead;
using conversation::Conversation;
using conversation::Message;
using conversation::Reply;
using conversation::Sampling;
using conversation::ToolCall;
using conversation::ToolChoice;
using conversation::ToolDef;
using conversation::UpstreamApi;
namespace translate = conversation::translate;

}  // namespace switchyard::frontends
