// The response object of the Responses API (see responses_object.h): statuses, item ids, a
// response built from a request and an answer, its JSON, and errors.
#include "frontends/responses/responses_object.h"

#include <iterator>

#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Dump;
using detail::Json;
using detail::NullIfEmpty;

constexpr std::string_view kStatusNames[] = {"in_progress", "completed", "incomplete",
                                             "failed",      "cancelled", "queued"};

std::string_view IdSuffix(std::string_view response_id) {
  size_t underscore = response_id.find('_');
  return underscore == std::string_view::npos ? response_id : response_id.substr(underscore + 1);
}

// The echo of a JSON value kept as text (tools, tool_choice); `fallback` if it does not parse.
Json Echo(const std::string& text, Json fallback) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? fallback : j;
}

Json UsageJson(const std::optional<Usage>& u) {
  if (!u) return nullptr;
  return {{"input_tokens", u->input_tokens},
          {"input_tokens_details", {{"cached_tokens", u->cached_tokens}}},
          {"output_tokens", u->output_tokens},
          {"output_tokens_details", {{"reasoning_tokens", u->reasoning_tokens}}},
          {"total_tokens", u->input_tokens + u->output_tokens}};
}

Json ErrorMember(const StoredResponse& r) {
  if (r.status != ResponseStatus::kFailed) return nullptr;
  return {{"code", r.error_code}, {"message", r.error_message}};
}

Json IncompleteDetails(const StoredResponse& r) {
  if (r.status != ResponseStatus::kIncomplete) return nullptr;
  return {{"reason", r.incomplete_reason}};
}

}  // namespace

std::string_view StatusName(ResponseStatus status) {
  return kStatusNames[static_cast<int>(status)];
}

std::optional<ResponseStatus> StatusFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kStatusNames); ++i) {
    if (kStatusNames[i] == name) return static_cast<ResponseStatus>(i);
  }
  return std::nullopt;
}

std::string OutputItemId(Item::Kind kind, std::string_view response_id, size_t index) {
  return std::string(IdPrefix(kind)) + "_" + std::string(IdSuffix(response_id)) + "_" +
         std::to_string(index);
}

std::string InputItemId(Item::Kind kind, std::string_view response_id, size_t index) {
  return std::string(IdPrefix(kind)) + "_" + std::string(IdSuffix(response_id)) + "_i" +
         std::to_string(index);
}

StoredResponse NewResponse(const CreateRequest& request, std::string id, int64_t created_at) {
  StoredResponse r;
  r.id = std::move(id);
  r.created_at = created_at;
  r.model = request.model;
  r.instructions = request.instructions;
  r.input = request.input;
  for (size_t i = 0; i < r.input.size(); ++i) {
    Item& item = r.input[i];
    if (item.id.empty()) item.id = InputItemId(item.kind, r.id, i);
    if (item.status.empty() && item.kind != Item::Kind::kReasoning) item.status = "completed";
  }
  r.tools_json = request.tools_json;
  r.tool_choice_json = request.tool_choice_json;
  r.parallel_tool_calls = request.parallel_tool_calls;
  r.max_output_tokens = request.max_output_tokens;
  r.temperature = request.temperature;
  r.top_p = request.top_p;
  r.store = request.store;
  r.previous_response_id = request.previous_response_id;
  r.prompt_cache_key = request.prompt_cache_key;
  r.user = request.user;
  r.metadata = request.metadata;
  return r;
}

Item CallItem(const ToolCall& call, const std::vector<ToolRoute>& routes, std::string id) {
  Item item{.kind = Item::Kind::kFunctionCall, .id = std::move(id), .status = "completed"};
  item.call_id = call.id;
  item.name = call.name;
  if (const ToolRoute* route = RouteOf(routes, call.name)) {
    item.name = route->name;
    item.tool_namespace = route->tool_namespace;
  }
  item.arguments = call.arguments;
  return item;
}

void ApplyAnswer(const Answer& answer, const std::vector<ToolRoute>& routes, StoredResponse* r) {
  const bool cut = answer.end == Answer::End::kLength;
  r->output.clear();
  if (!answer.text.empty()) {
    r->output.push_back(Item{.kind = Item::Kind::kMessage,
                             .id = OutputItemId(Item::Kind::kMessage, r->id, 0),
                             .status = cut ? "incomplete" : "completed",
                             .role = "assistant",
                             .text = answer.text});
  }
  for (const ToolCall& call : answer.tool_calls) {
    std::string id = OutputItemId(Item::Kind::kFunctionCall, r->id, r->output.size());
    r->output.push_back(CallItem(call, routes, std::move(id)));
  }
  r->status = cut ? ResponseStatus::kIncomplete : ResponseStatus::kCompleted;
  r->incomplete_reason = cut ? "max_output_tokens" : "";
  r->usage = Usage{.input_tokens = answer.prompt_tokens,
                   .cached_tokens = answer.cached_tokens,
                   .output_tokens = answer.completion_tokens};
}

void FailResponse(const Status& s, StoredResponse* r) {
  r->status = ResponseStatus::kFailed;
  switch (s.code()) {
    case StatusCode::kResourceExhausted:
      r->error_code = "rate_limit_exceeded";
      break;
    case StatusCode::kOutOfRange:
      r->error_code = "context_length_exceeded";
      break;
    case StatusCode::kInvalidArgument:
      r->error_code = "invalid_prompt";
      break;
    default:
      r->error_code = "server_error";
  }
  r->error_message = s.message();
}

namespace detail {

Json ResponseObject(const StoredResponse& r) {
  Json output = Json::array();
  for (const Item& item : r.output) output.push_back(ItemJson(item));
  Json metadata = Json::object();
  for (const auto& [k, v] : r.metadata) metadata[k] = v;
  return {{"id", r.id},
          {"object", "response"},
          {"created_at", r.created_at},
          {"status", StatusName(r.status)},
          {"background", false},
          {"error", ErrorMember(r)},
          {"incomplete_details", IncompleteDetails(r)},
          {"instructions", NullIfEmpty(r.instructions)},
          {"max_output_tokens", r.max_output_tokens > 0 ? Json(r.max_output_tokens) : Json()},
          {"model", r.model},
          {"output", std::move(output)},
          {"parallel_tool_calls", r.parallel_tool_calls},
          {"previous_response_id", NullIfEmpty(r.previous_response_id)},
          {"prompt_cache_key", NullIfEmpty(r.prompt_cache_key)},
          {"store", r.store},
          {"temperature", r.temperature},
          {"text", {{"format", {{"type", "text"}}}}},
          {"tool_choice", Echo(r.tool_choice_json, "auto")},
          {"tools", Echo(r.tools_json, Json::array())},
          {"top_p", r.top_p},
          {"usage", UsageJson(r.usage)},
          {"user", NullIfEmpty(r.user)},
          {"metadata", std::move(metadata)}};
}

}  // namespace detail

std::string ResponseJson(const StoredResponse& r) { return Dump(detail::ResponseObject(r)); }

std::string DeletedJson(std::string_view id) {
  return Dump(Json{{"id", id}, {"object", "response"}, {"deleted", true}});
}

namespace {

std::string_view ErrorType(int http_status) {
  switch (http_status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 429:
      return "rate_limit_error";
    default:
      return http_status >= 500 ? "server_error" : "invalid_request_error";
  }
}

int HttpStatusOf(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotSupported:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kAborted:
      return 409;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

}  // namespace

std::string ErrorJson(int http_status, std::string_view message, std::string_view param,
                      std::string_view code) {
  Json err = {{"message", message},
              {"type", ErrorType(http_status)},
              {"param", param.empty() ? Json() : Json(param)},
              {"code", code.empty() ? Json() : Json(code)}};
  return Dump(Json{{"error", std::move(err)}});
}

HttpError ErrorFromStatus(const Status& s) {
  const int http = HttpStatusOf(s.code());
  std::string code = http == 404                             ? "not_found"
                     : http == 429                           ? "rate_limit_exceeded"
                     : s.code() == StatusCode::kNotSupported ? "unsupported"
                                                             : "";
  return {http, ErrorJson(http, s.message(), ParamOf(s), code)};
}

}  // namespace switchyard::frontends::responses
