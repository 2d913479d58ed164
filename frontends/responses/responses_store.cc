// The stored form of a response (see StoredResponse in responses_object.h): the response
// object plus its input items, written and read back.
#include "frontends/responses/responses_json.h"
#include "frontends/responses/responses_object.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Bad;
using detail::Dump;
using detail::Get;
using detail::Indexed;
using detail::Json;
using detail::ReadBool;
using detail::ReadInt;
using detail::ReadNumber;
using detail::ReadObject;
using detail::ReadString;
using detail::WrongType;

Status ReadItems(const Json& j, const char* key, std::vector<Item>* out) {
  const Json* v = Get(j, key);
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType(key, *v, "an array");
  for (size_t i = 0; i < v->size(); ++i) {
    std::string skipped;
    SY_ASSIGN_OR_RETURN(std::optional<Item> item,
                        detail::ParseItem((*v)[i], Indexed(key, i), &skipped));
    if (item) out->push_back(std::move(*item));
  }
  return Status::OK();
}

Status ReadIdentity(const Json& j, StoredResponse* r) {
  if (Get(j, "id") == nullptr) return Bad("id", "required");
  SY_RETURN_IF_ERROR(ReadString(j, "", "id", &r->id));
  std::optional<int64_t> created;
  SY_RETURN_IF_ERROR(ReadInt(j, "", "created_at", &created));
  if (!created) return Bad("created_at", "required");
  r->created_at = *created;
  std::string status;
  SY_RETURN_IF_ERROR(ReadString(j, "", "status", &status));
  std::optional<ResponseStatus> parsed = StatusFromName(status);
  if (!parsed) return Bad("status", "unknown status " + detail::Quoted(status));
  r->status = *parsed;
  SY_RETURN_IF_ERROR(ReadString(j, "", "model", &r->model));
  return ReadString(j, "", "instructions", &r->instructions);
}

Status ReadEcho(const Json& j, StoredResponse* r) {
  if (const Json* tools = Get(j, "tools")) {
    if (!tools->is_array()) return WrongType("tools", *tools, "an array");
    r->tools_json = Dump(*tools);
  }
  if (const Json* choice = Get(j, "tool_choice")) r->tool_choice_json = Dump(*choice);
  SY_RETURN_IF_ERROR(ReadBool(j, "", "parallel_tool_calls", &r->parallel_tool_calls));
  std::optional<int64_t> max_tokens;
  SY_RETURN_IF_ERROR(ReadInt(j, "", "max_output_tokens", &max_tokens));
  r->max_output_tokens = max_tokens.value_or(0);
  std::optional<double> temperature, top_p;
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "temperature", &temperature));
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "top_p", &top_p));
  r->temperature = temperature.value_or(1.0);
  r->top_p = top_p.value_or(1.0);
  SY_RETURN_IF_ERROR(ReadBool(j, "", "store", &r->store));
  SY_RETURN_IF_ERROR(ReadString(j, "", "previous_response_id", &r->previous_response_id));
  SY_RETURN_IF_ERROR(ReadString(j, "", "prompt_cache_key", &r->prompt_cache_key));
  return ReadString(j, "", "user", &r->user);
}

Status ReadMetadata(const Json& j, StoredResponse* r) {
  const Json* v = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "metadata", &v));
  if (v == nullptr) return Status::OK();
  for (const auto& [key, value] : v->items()) {
    if (!value.is_string()) return WrongType("metadata." + key, value, "a string");
    r->metadata[key] = value.get<std::string>();
  }
  return Status::OK();
}

Status ReadOutcome(const Json& j, StoredResponse* r) {
  const Json* error = nullptr;
  const Json* incomplete = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "error", &error));
  if (error != nullptr) {
    SY_RETURN_IF_ERROR(ReadString(*error, "error", "code", &r->error_code));
    SY_RETURN_IF_ERROR(ReadString(*error, "error", "message", &r->error_message));
  }
  SY_RETURN_IF_ERROR(ReadObject(j, "", "incomplete_details", &incomplete));
  if (incomplete != nullptr) {
    SY_RETURN_IF_ERROR(
        ReadString(*incomplete, "incomplete_details", "reason", &r->incomplete_reason));
  }
  return ReadMetadata(j, r);
}

// A count of `obj` (absent or null: 0); a negative one is refused.
Status ReadCount(const Json& obj, std::string_view prefix, const char* key, int64_t* out) {
  std::optional<int64_t> v;
  SY_RETURN_IF_ERROR(ReadInt(obj, prefix, key, &v));
  if (v && *v < 0) return Bad(detail::Path(prefix, key), "must be >= 0");
  *out = v.value_or(0);
  return Status::OK();
}

Status ReadUsage(const Json& j, StoredResponse* r) {
  const Json* u = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "usage", &u));
  if (u == nullptr) return Status::OK();
  Usage usage;
  SY_RETURN_IF_ERROR(ReadCount(*u, "usage", "input_tokens", &usage.input_tokens));
  SY_RETURN_IF_ERROR(ReadCount(*u, "usage", "output_tokens", &usage.output_tokens));
  const Json* in = nullptr;
  const Json* out = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(*u, "usage", "input_tokens_details", &in));
  SY_RETURN_IF_ERROR(ReadObject(*u, "usage", "output_tokens_details", &out));
  if (in != nullptr) {
    SY_RETURN_IF_ERROR(
        ReadCount(*in, "usage.input_tokens_details", "cached_tokens", &usage.cached_tokens));
  }
  if (out != nullptr) {
    SY_RETURN_IF_ERROR(ReadCount(*out, "usage.output_tokens_details", "reasoning_tokens",
                                 &usage.reasoning_tokens));
  }
  r->usage = usage;
  return Status::OK();
}

Result<StoredResponse> Read(std::string_view json) {
  SY_ASSIGN_OR_RETURN(Json j, detail::ParseObject(json));
  StoredResponse r;
  SY_RETURN_IF_ERROR(ReadIdentity(j, &r));
  SY_RETURN_IF_ERROR(ReadItems(j, "input", &r.input));
  SY_RETURN_IF_ERROR(ReadItems(j, "output", &r.output));
  SY_RETURN_IF_ERROR(ReadEcho(j, &r));
  SY_RETURN_IF_ERROR(ReadOutcome(j, &r));
  SY_RETURN_IF_ERROR(ReadUsage(j, &r));
  return r;
}

}  // namespace

std::string StoredResponse::ToJson() const {
  Json j = detail::ResponseObject(*this);
  Json input = Json::array();
  for (const Item& item : this->input) input.push_back(detail::ItemJson(item));
  j["input"] = std::move(input);
  return Dump(j);
}

Result<StoredResponse> StoredResponse::FromJson(std::string_view json) {
  Result<StoredResponse> r = Read(json);
  if (r.ok()) return r;
  return Status::DataLoss("stored response: " + r.status().message());
}

}  // namespace switchyard::frontends::responses
