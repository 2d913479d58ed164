// The request of the OpenAI Responses API's front: the body of POST /v1/responses parsed into
// a CreateRequest, every field the service acts on validated, and what it cannot honour
// refused with a 400 naming the parameter path ("input[2].call_id: required"). The input
// items are read by responses_input.cc, the tools and tool_choice by responses_tools.cc, the
// rest by responses_request.cc. Which fields are honoured, ignored or refused is the table
// in responses_protocol.h.
//
// JSON goes through nlohmann::json; no exception leaves these functions: a malformed body is
// an InvalidArgument.
//
// Thread-safety: pure functions; call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "frontends/conversation_names.h"
#include "frontends/responses/responses_items.h"

namespace switchyard::frontends::responses {

struct CreateRequest {
  std::string model;         // required, non-empty
  std::vector<Item> input;   // a string input is one user message; ids as the client sent them
  std::string instructions;  // a system message before everything else ("" = none)
  // The functions the model may call: top-level `function` tools and the functions of
  // `namespace` tools, flattened (routes[i] says where tools[i] came from; names unique).
  std::vector<ToolDef> tools;
  std::vector<ToolRoute> routes;
  std::string tools_json = "[]";  // the honoured tools as sent (function and namespace), an array
  ToolChoice tool_choice;         // kRequired / kFunction only with tools
  std::string tool_choice_json = "\"auto\"";  // as sent, for the response's echo
  bool parallel_tool_calls = true;
  int64_t max_output_tokens = 0;  // >= 1 when given, 0 = not given
  double temperature = 1.0;       // [0, 2]
  double top_p = 1.0;             // (0, 1]
  bool stream = false;
  bool store = true;  // whether the response may be fetched and chained later (OpenAI's default)
  std::string previous_response_id;
  std::string prompt_cache_key;
  // prompt_cache_retention: "24h" asks that the prompt's cache be kept for a day: the
  // session's context is then retained that long after the answer (kept in HBM or moved to
  // a tier, never dropped for recompute), in ms; "in-memory" (OpenAI's default) or absent: 0.
  int64_t retain_ms = 0;
  std::string user;
  std::map<std::string, std::string> metadata;  // at most 16 string pairs
  // Fields, tools and items accepted but not acted on, for logs: top-level names
  // ("reasoning", "n"), nested parameters ("text.verbosity"), hosted tools
  // ("tools[2] (web_search)") and ignored input item kinds, each kind once at its first
  // index ("input[4] (web_search_call)").
  std::vector<std::string> ignored;
};

// Parse a request body. Errors are InvalidArgument whose message starts with the offending
// parameter path ("input[2].content[0].type: ..."); ParamOf recovers it. A body that is not a
// JSON object (or nests deeper than 64 levels) names no parameter. null counts as absent for
// every optional field.
Result<CreateRequest> ParseCreate(std::string_view body);
// The parameter an InvalidArgument of this layer names ("" if none or another code).
std::string ParamOf(const Status& s);

// The conversation the model continues: the request's instructions as a system message, then
// the items of each previous response of a previous_response_id chain (oldest first; its
// input items, then its output items — not its instructions, as OpenAI does not carry them
// over), then the request's input (see ItemsToMessages). Tools, tool choice and sampling are
// the request's.
struct StoredResponse;
Conversation ChainConversation(const std::vector<StoredResponse>& previous,
                               const CreateRequest& request);
// The same without a chain.
Conversation ToConversation(const CreateRequest& request);

}  // namespace switchyard::frontends::responses
