// The response object of the OpenAI Responses API and what the front keeps of it.
//
// A StoredResponse is one response: the request's settings and input items, the output
// items, usage and status. NewResponse starts one from a parsed request (status in_progress),
// ApplyAnswer fills it from the engine's Answer, FailResponse marks it failed. ResponseJson
// writes it as POST /v1/responses and GET /v1/responses/{id} return it; ToJson / FromJson
// store it durably (the same object plus its "input" items) and read it back, so a GET and a
// previous_response_id chain (ChainConversation, responses_request.h) work from storage
// alone. Item ids are derived from the response id (the caller allocates "resp_<random>"):
// no two items of one response share one.
//
// No exception leaves these functions; text that is not valid UTF-8 is written with U+FFFD
// in place of the bad bytes.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/status.h"
#include "frontends/conversation_names.h"
#include "frontends/responses/responses_items.h"
#include "frontends/responses/responses_request.h"

namespace switchyard::frontends::responses {

enum class ResponseStatus { kInProgress, kCompleted, kIncomplete, kFailed, kCancelled, kQueued };
// "in_progress", "completed", "incomplete", "failed", "cancelled", "queued".
std::string_view StatusName(ResponseStatus status);
std::optional<ResponseStatus> StatusFromName(std::string_view name);

struct Usage {
  int64_t input_tokens = 0, cached_tokens = 0;  // cached: prompt tokens the context held
  int64_t output_tokens = 0, reasoning_tokens = 0;
};

struct StoredResponse {
  std::string id;          // "resp_..."
  int64_t created_at = 0;  // seconds since the Unix epoch
  ResponseStatus status = ResponseStatus::kInProgress;
  std::string model;
  std::string instructions;  // "" -> null
  std::vector<Item> input;   // the request's input items, ids assigned
  std::vector<Item> output;
  std::string tools_json = "[]";              // CreateRequest::tools_json
  std::string tool_choice_json = "\"auto\"";  // CreateRequest::tool_choice_json
  bool parallel_tool_calls = true;
  int64_t max_output_tokens = 0;  // 0 -> null
  double temperature = 1.0, top_p = 1.0;
  bool store = true;
  std::string previous_response_id, prompt_cache_key, user;  // "" -> null
  std::map<std::string, std::string> metadata;
  std::string incomplete_reason;          // kIncomplete: "max_output_tokens"
  std::string error_code, error_message;  // kFailed: "server_error", ...
  std::optional<Usage> usage;             // null until the answer is known

  // The stored form: ResponseJson's object plus "input" (the input items).
  std::string ToJson() const;
  // Reads ToJson's form back; DataLoss naming the member when it is not that form.
  static Result<StoredResponse> FromJson(std::string_view json);
};

// A response to `request`: its settings echoed, its input items with ids assigned, status
// in_progress, no output.
StoredResponse NewResponse(const CreateRequest& request, std::string id, int64_t created_at);
// The id of the item at `index` of a response's input or output: "<prefix>_<suffix>_<index>"
// for output and "<prefix>_<suffix>_i<index>" for input, where suffix is the response id
// after its first '_' (the whole id if it has none).
std::string OutputItemId(Item::Kind kind, std::string_view response_id, size_t index);
std::string InputItemId(Item::Kind kind, std::string_view response_id, size_t index);
// The output item of one call the model made: its flat name mapped back to the client's name
// and namespace through `routes`, status completed.
Item CallItem(const ToolCall& call, const std::vector<ToolRoute>& routes, std::string id);
// Fills `r` from the engine's answer: the output (a message with the text if any, then one
// function_call per call, in that order), usage, and the status: incomplete with reason
// max_output_tokens (and the message incomplete) when generation hit the length limit,
// completed otherwise.
void ApplyAnswer(const Answer& answer, const std::vector<ToolRoute>& routes, StoredResponse* r);
// Marks `r` failed with an error for `s`: code rate_limit_exceeded (ResourceExhausted),
// context_length_exceeded (OutOfRange: a prompt longer than the context; Codex compacts its
// history on this code), invalid_prompt (InvalidArgument) or server_error, and s's message.
void FailResponse(const Status& s, StoredResponse* r);

// The response object {"id","object":"response","created_at","status",...,"usage","metadata"}.
std::string ResponseJson(const StoredResponse& r);
// DELETE /v1/responses/{id}: {"id","object":"response","deleted":true}.
std::string DeletedJson(std::string_view id);

// GET /v1/responses/{id}/input_items query parameters.
struct ListParams {
  bool ascending = false;  // order: "desc" (the default) or "asc"
  std::string after;       // an item id: list the items after it in that order
  int limit = 20;          // 1..100
};
// Reads order, after and limit from a query-parameter map (others, e.g. include, are
// ignored); InvalidArgument naming the parameter.
Result<ListParams> ParseListParams(const std::map<std::string, std::string>& query);
// {"object":"list","data":[items],"first_id","last_id","has_more"} of r's input items;
// InvalidArgument naming `after` when no input item has that id.
Result<std::string> InputItemsJson(const StoredResponse& r, const ListParams& params);

// Errors as OpenAI returns them: {"error":{"message","type","param","code"}} (param and code
// null when empty; type from the HTTP status: invalid_request_error, authentication_error,
// permission_error, rate_limit_error or server_error).
std::string ErrorJson(int http_status, std::string_view message, std::string_view param = "",
                      std::string_view code = "");
// The HTTP status and body for a Status: InvalidArgument -> 400 with ParamOf as param,
// Unauthenticated 401, PermissionDenied 403, NotFound 404, ResourceExhausted 429,
// Unavailable 503, DeadlineExceeded 504, anything else 500.
struct HttpError {
  int http_status = 500;
  std::string body;
};
HttpError ErrorFromStatus(const Status& s);

}  // namespace switchyard::frontends::responses
