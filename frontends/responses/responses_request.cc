// Parsing POST /v1/responses (see responses_request.h): the top-level fields, those accepted
// and listed, those refused; the input items and the tools are responses_input.cc's and
// responses_tools.cc's.
#include "frontends/responses/responses_request.h"

#include <optional>

#include "frontends/openai/openai_request.h"
#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses {
namespace {

using detail::Bad;
using detail::Get;
using detail::IsOneOf;
using detail::Json;
using detail::Quoted;
using detail::ReadBool;
using detail::ReadInt;
using detail::ReadNumber;
using detail::ReadObject;
using detail::ReadString;
using detail::WrongType;

constexpr size_t kMaxMetadataPairs = 16, kMaxMetadataKey = 64, kMaxMetadataValue = 512;

// The members ParseCreate acts on (or refuses); every other top-level member is listed in
// CreateRequest::ignored: the documented ones this server does not act on (reasoning,
// include, client_metadata, service_tier, truncation,
// safety_identifier, stream_options, top_logprobs, max_tool_calls) and unknown ones alike.
bool IsReadField(const std::string& key) {
  return IsOneOf(
      " model input instructions tools tool_choice parallel_tool_calls max_output_tokens "
      " temperature top_p stream store previous_response_id prompt_cache_key metadata "
      " prompt_cache_retention "
      " user text background conversation prompt ",
      key);
}

Status ParseModel(const Json& j, CreateRequest* r) {
  if (Get(j, "model") == nullptr) return Bad("model", "required");
  SY_RETURN_IF_ERROR(ReadString(j, "", "model", &r->model));
  if (r->model.empty()) return Bad("model", "must not be empty");
  return Status::OK();
}

Status ParseSampling(const Json& j, CreateRequest* r) {
  std::optional<int64_t> max_tokens;
  SY_RETURN_IF_ERROR(ReadInt(j, "", "max_output_tokens", &max_tokens));
  if (max_tokens) {
    if (*max_tokens < 1) return Bad("max_output_tokens", "must be at least 1");
    r->max_output_tokens = *max_tokens;
  }
  std::optional<double> temperature, top_p;
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "temperature", &temperature));
  if (temperature) {
    if (!(*temperature >= 0 && *temperature <= 2)) return Bad("temperature", "must be in [0, 2]");
    r->temperature = *temperature;
  }
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "top_p", &top_p));
  if (top_p) {
    if (!(*top_p > 0 && *top_p <= 1)) return Bad("top_p", "must be in (0, 1]");
    r->top_p = *top_p;
  }
  return Status::OK();
}

Status ParseMetadata(const Json& j, CreateRequest* r) {
  const Json* v = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "metadata", &v));
  if (v == nullptr) return Status::OK();
  if (v->size() > kMaxMetadataPairs) return Bad("metadata", "at most 16 pairs");
  for (const auto& [key, value] : v->items()) {
    const std::string p = "metadata." + key;
    if (key.size() > kMaxMetadataKey) return Bad("metadata", "keys are at most 64 characters");
    if (!value.is_string()) return WrongType(p, value, "a string");
    if (value.get_ref<const std::string&>().size() > kMaxMetadataValue) {
      return Bad(p, "at most 512 characters");
    }
    r->metadata[key] = value.get<std::string>();
  }
  return Status::OK();
}

Status ParseFlagsAndIds(const Json& j, CreateRequest* r) {
  SY_RETURN_IF_ERROR(ReadBool(j, "", "parallel_tool_calls", &r->parallel_tool_calls));
  SY_RETURN_IF_ERROR(ReadBool(j, "", "stream", &r->stream));
  SY_RETURN_IF_ERROR(ReadBool(j, "", "store", &r->store));
  SY_RETURN_IF_ERROR(ReadString(j, "", "instructions", &r->instructions));
  SY_RETURN_IF_ERROR(ReadString(j, "", "prompt_cache_key", &r->prompt_cache_key));
  std::string retention;
  SY_RETURN_IF_ERROR(ReadString(j, "", "prompt_cache_retention", &retention));
  if (retention == "24h") {
    r->retain_ms = 86'400'000;
  } else if (!retention.empty() && retention != "in-memory" && retention != "in_memory") {
    return Bad("prompt_cache_retention",
               "expected \"in-memory\" or \"24h\", got \"" + retention.substr(0, 64) + "\"");
  }
  SY_RETURN_IF_ERROR(ReadString(j, "", "user", &r->user));
  return ReadString(j, "", "previous_response_id", &r->previous_response_id);
}

// text: {"format": {"type": "text"}} only — structured output is not enforced here.
Status ParseText(const Json& j, CreateRequest* r) {
  const Json* text = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "text", &text));
  if (text == nullptr) return Status::OK();
  if (Get(*text, "verbosity") != nullptr) r->ignored.push_back("text.verbosity");
  const Json* format = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(*text, "text", "format", &format));
  if (format == nullptr) return Status::OK();
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(*format, "text.format", "type", &type));
  if (type == "json_schema" || type == "json_object") {
    return Bad("text.format", Quoted(type) +
                                  " is not supported: this server does not enforce structured "
                                  "output (only {\"type\":\"text\"})");
  }
  if (type != "text") return Bad("text.format.type", "expected \"text\", got " + Quoted(type));
  return Status::OK();
}

// Fields whose meaning this server cannot honour: refused when set.
Status ParseRefused(const Json& j) {
  bool background = false;
  SY_RETURN_IF_ERROR(ReadBool(j, "", "background", &background));
  if (background) return Bad("background", "background responses are not supported");
  if (Get(j, "conversation") != nullptr) {
    return Bad("conversation", "conversations are not supported; use previous_response_id");
  }
  if (Get(j, "prompt") != nullptr) {
    return Bad("prompt", "prompt templates are not supported; send instructions and input");
  }
  return Status::OK();
}

}  // namespace

Result<CreateRequest> ParseCreate(std::string_view body) {
  SY_ASSIGN_OR_RETURN(Json j, detail::ParseObject(body));
  CreateRequest r;
  for (const auto& [key, value] : j.items()) {
    if (!IsReadField(key)) r.ignored.push_back(key);
  }
  SY_RETURN_IF_ERROR(ParseModel(j, &r));
  SY_RETURN_IF_ERROR(ParseRefused(j));
  SY_RETURN_IF_ERROR(ParseFlagsAndIds(j, &r));
  SY_RETURN_IF_ERROR(detail::ParseTools(j, &r));
  SY_RETURN_IF_ERROR(detail::ParseToolChoice(j, &r));
  SY_RETURN_IF_ERROR(detail::ParseInput(j, &r));
  SY_RETURN_IF_ERROR(ParseSampling(j, &r));
  SY_RETURN_IF_ERROR(ParseMetadata(j, &r));
  SY_RETURN_IF_ERROR(ParseText(j, &r));
  return r;
}

std::string ParamOf(const Status& s) { return openai::ParamOf(s); }

}  // namespace switchyard::frontends::responses
