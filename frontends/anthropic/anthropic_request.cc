// Parsing the requests of the Anthropic front (see anthropic_request.h): the top-level
// parameters, tools and tool_choice, metadata and thinking, the ignored fields and the entry
// points. The conversation itself (system, messages) is anthropic_content.cc's.
#include "frontends/anthropic/anthropic_request.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "frontends/anthropic/anthropic_content.h"
#include "frontends/anthropic/anthropic_json.h"

namespace switchyard::frontends::anthropic {
namespace {

using detail::Bad;
using detail::Get;
using detail::Indexed;
using detail::Json;
using detail::Quoted;
using detail::ReadBool;
using detail::ReadInt;
using detail::ReadNumber;
using detail::ReadObject;
using detail::ReadString;
using detail::RequireString;
using detail::WrongType;

// ---------------------------------------------------------------------------------------------
// Which top-level fields are read; every other present one is named in `ignored`.

bool Listed(std::string_view list, const std::string& key) {
  if (key.find(' ') != std::string::npos) return false;
  return list.find(" " + key + " ") != std::string_view::npos;
}

// Read and honoured (top_k and thinking are read but not honoured: they are named too).
bool IsHonoured(const std::string& key, bool count_tokens) {
  static constexpr std::string_view kBoth = " model messages system tools tool_choice ";
  static constexpr std::string_view kMessages =
      " max_tokens stop_sequences temperature top_p stream metadata ";
  return Listed(kBoth, key) || (!count_tokens && Listed(kMessages, key));
}

std::vector<std::string> IgnoredFields(const Json& j, bool count_tokens) {
  std::vector<std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_null() && !IsHonoured(key, count_tokens)) out.push_back(key);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Scalars.

Status ParseModel(const Json& j, MessagesRequest* r) {
  SY_RETURN_IF_ERROR(RequireString(j, "", "model", &r->conversation.model));
  if (r->conversation.model.empty()) return Bad("model", "must not be empty");
  return Status::OK();
}

Status ParseMaxTokens(const Json& j, MessagesRequest* r) {
  std::optional<int64_t> v;
  if (Get(j, "max_tokens") == nullptr) return Bad("max_tokens", "required");
  SY_RETURN_IF_ERROR(ReadInt(j, "", "max_tokens", &v));
  if (*v < 1) return Bad("max_tokens", "must be at least 1");
  r->conversation.sampling.max_tokens = *v;
  return Status::OK();
}

Status ParseSampling(const Json& j, MessagesRequest* r) {
  Sampling& s = r->conversation.sampling;
  std::optional<double> temperature, top_p;
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "temperature", &temperature));
  if (temperature) {
    if (!(*temperature >= 0 && *temperature <= 1)) return Bad("temperature", "must be in [0, 1]");
    s.temperature = *temperature;
  }
  SY_RETURN_IF_ERROR(ReadNumber(j, "", "top_p", &top_p));
  if (top_p) {
    if (!(*top_p > 0 && *top_p <= 1)) return Bad("top_p", "must be in (0, 1]");
    s.top_p = *top_p;
  }
  SY_RETURN_IF_ERROR(ReadInt(j, "", "top_k", &r->top_k));
  if (r->top_k && *r->top_k < 0) return Bad("top_k", "must be at least 0");
  return Status::OK();
}

Status ParseStopSequences(const Json& j, MessagesRequest* r) {
  const Json* v = Get(j, "stop_sequences");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType("stop_sequences", *v, "an array of strings");
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& s = (*v)[i];
    const std::string p = Indexed("stop_sequences", i);
    if (!s.is_string()) return WrongType(p, s, "a string");
    if (s.get_ref<const std::string&>().empty()) return Bad(p, "must not be empty");
    r->conversation.sampling.stop.push_back(s.get<std::string>());
  }
  return Status::OK();
}

// The session id in Claude Code's metadata.user_id: a JSON object with "session_id", or the
// older "user_<hash>_account_<uuid>_session_<uuid>".
std::string SessionIdIn(const std::string& user_id) {
  if (!user_id.empty() && user_id.front() == '{') {
    Json j = Json::parse(user_id, nullptr, /*allow_exceptions=*/false);
    if (j.is_object()) {
      auto it = j.find("session_id");
      return it != j.end() && it->is_string() ? it->get<std::string>() : "";
    }
  }
  constexpr std::string_view kMarker = "_session_";
  size_t at = user_id.rfind(kMarker);
  if (user_id.rfind("user_", 0) != 0 || at == std::string::npos) return "";
  return user_id.substr(at + kMarker.size());
}

Status ParseMetadata(const Json& j, MessagesRequest* r) {
  const Json* metadata = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "metadata", &metadata));
  if (metadata == nullptr) return Status::OK();
  SY_RETURN_IF_ERROR(ReadString(*metadata, "metadata", "user_id", &r->metadata_user_id));
  r->metadata_session_id = SessionIdIn(r->metadata_user_id);
  return Status::OK();
}

Status ParseThinking(const Json& j, MessagesRequest* r) {
  const Json* v = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "thinking", &v));
  if (v == nullptr) return Status::OK();
  std::string type;
  SY_RETURN_IF_ERROR(RequireString(*v, "thinking", "type", &type));
  using Type = Thinking::Type;
  if (type == "disabled") {
    r->thinking.type = Type::kDisabled;
  } else if (type == "adaptive") {
    r->thinking.type = Type::kAdaptive;
  } else if (type == "enabled") {
    r->thinking.type = Type::kEnabled;
    std::optional<int64_t> budget;
    if (Get(*v, "budget_tokens") == nullptr) return Bad("thinking.budget_tokens", "required");
    SY_RETURN_IF_ERROR(ReadInt(*v, "thinking", "budget_tokens", &budget));
    if (*budget < 1024) return Bad("thinking.budget_tokens", "must be at least 1024");
    r->thinking.budget_tokens = *budget;
  } else {
    return Bad("thinking.type",
               "expected \"enabled\", \"disabled\" or \"adaptive\", got " + Quoted(type));
  }
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Tools.

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// An Anthropic-defined tool's type: a name and an 8-digit date ("web_search_20250305").
bool IsVersionedType(const std::string& type) {
  constexpr size_t kDate = 8;
  if (type.size() < kDate + 2 || type[type.size() - kDate - 1] != '_') return false;
  auto is_digit = [](char c) { return c >= '0' && c <= '9'; };
  auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  };
  return std::all_of(type.end() - kDate, type.end(), is_digit) &&
         std::all_of(type.begin(), type.end() - kDate, is_word);
}

Result<ToolDef> ParseCustomTool(const Json& t, const std::string& p) {
  ToolDef def;
  SY_RETURN_IF_ERROR(RequireString(t, p, "name", &def.name));
  if (!ValidToolName(def.name)) {
    return Bad(p + ".name", "must be 1-128 characters of a-z, A-Z, 0-9, _ and -");
  }
  SY_RETURN_IF_ERROR(ReadString(t, p, "description", &def.description));
  const Json* schema = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(t, p, "input_schema", &schema));
  if (schema == nullptr) return Bad(p + ".input_schema", "required");
  def.parameters_json = detail::Dump(*schema);
  return def;
}

// One entry of tools: a custom tool into the Conversation, or a hosted one named as ignored.
Status ParseTool(const Json& t, size_t i, std::vector<std::string>* hosted, MessagesRequest* r) {
  const std::string p = Indexed("tools", i);
  if (!t.is_object()) return WrongType(p, t, "an object");
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(t, p, "type", &type));
  std::vector<ToolDef>& tools = r->conversation.tools;
  if (type.empty() || type == "custom") {
    SY_ASSIGN_OR_RETURN(ToolDef def, ParseCustomTool(t, p));
    bool dup = std::any_of(tools.begin(), tools.end(),
                           [&](const ToolDef& d) { return d.name == def.name; });
    if (dup) return Bad(p + ".name", "duplicate tool name " + Quoted(def.name));
    tools.push_back(std::move(def));
  } else if (IsVersionedType(type)) {
    hosted->push_back(p + ":" + type);
  } else {
    return Bad(p + ".type",
               "expected \"custom\" or a versioned tool type such as \"bash_20250124\", got " +
                   Quoted(type));
  }
  std::optional<std::string> ttl;
  SY_RETURN_IF_ERROR(detail::ReadCacheControl(t, p, &ttl));
  if (ttl) {
    CacheBreakpoint mark{
        CacheBreakpoint::On::kTool, i, 0, static_cast<int64_t>(tools.size()) - 1, -1, *ttl};
    r->cache_breakpoints.push_back(std::move(mark));
  }
  return Status::OK();
}

Status ParseTools(const Json& j, std::vector<std::string>* hosted, MessagesRequest* r) {
  const Json* v = Get(j, "tools");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType("tools", *v, "an array");
  for (size_t i = 0; i < v->size(); ++i) SY_RETURN_IF_ERROR(ParseTool((*v)[i], i, hosted, r));
  return Status::OK();
}

Status ParseToolChoice(const Json& j, MessagesRequest* r) {
  const Json* v = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(j, "", "tool_choice", &v));
  if (v == nullptr) return Status::OK();
  Conversation& c = r->conversation;
  std::string type;
  SY_RETURN_IF_ERROR(RequireString(*v, "tool_choice", "type", &type));
  using Kind = ToolChoice::Kind;
  if (type == "auto" || type == "none") {
    c.tool_choice.kind = type == "auto" ? Kind::kAuto : Kind::kNone;
  } else if (type == "any") {
    if (c.tools.empty()) return Bad("tool_choice.type", "\"any\" needs tools");
    c.tool_choice.kind = Kind::kRequired;
  } else if (type == "tool") {
    std::string name;
    SY_RETURN_IF_ERROR(RequireString(*v, "tool_choice", "name", &name));
    bool known = std::any_of(c.tools.begin(), c.tools.end(),
                             [&](const ToolDef& t) { return t.name == name; });
    if (!known)
      return Bad("tool_choice.name", "no custom tool named " + Quoted(name) + " in tools");
    c.tool_choice = {Kind::kFunction, name};
  } else {
    return Bad("tool_choice.type",
               "expected \"auto\", \"any\", \"tool\" or \"none\", got " + Quoted(type));
  }
  bool disable_parallel = false;
  SY_RETURN_IF_ERROR(ReadBool(*v, "tool_choice", "disable_parallel_tool_use", &disable_parallel));
  c.parallel_tool_calls = !disable_parallel;
  return Status::OK();
}

// ---------------------------------------------------------------------------------------------
// Entry points.

Result<MessagesRequest> Parse(std::string_view body, bool count_tokens) {
  SY_ASSIGN_OR_RETURN(Json j, detail::ParseBody(body));
  MessagesRequest r;
  r.count_tokens = count_tokens;
  SY_RETURN_IF_ERROR(ParseModel(j, &r));
  if (!count_tokens) {
    SY_RETURN_IF_ERROR(ParseMaxTokens(j, &r));
    SY_RETURN_IF_ERROR(ParseSampling(j, &r));
    SY_RETURN_IF_ERROR(ParseStopSequences(j, &r));
    SY_RETURN_IF_ERROR(ReadBool(j, "", "stream", &r.stream));
    SY_RETURN_IF_ERROR(ParseMetadata(j, &r));
  }
  SY_RETURN_IF_ERROR(ParseThinking(j, &r));
  std::vector<std::string> hosted;
  SY_RETURN_IF_ERROR(ParseTools(j, &hosted, &r));
  SY_RETURN_IF_ERROR(ParseToolChoice(j, &r));
  SY_RETURN_IF_ERROR(detail::ParseSystem(j, &r));
  SY_RETURN_IF_ERROR(detail::ParseMessageList(j, &r));
  r.ignored = IgnoredFields(j, count_tokens);
  r.ignored.insert(r.ignored.end(), hosted.begin(), hosted.end());
  return r;
}

}  // namespace

Result<MessagesRequest> ParseMessages(std::string_view body) { return Parse(body, false); }

int64_t RetentionMs(const std::vector<CacheBreakpoint>& breakpoints) {
  int64_t ms = 0;
  for (const CacheBreakpoint& b : breakpoints)
    ms = std::max<int64_t>(ms, b.ttl == "1h" ? 3'600'000 : 300'000);
  return ms;
}

Result<MessagesRequest> ParseCountTokens(std::string_view body) { return Parse(body, true); }

std::string ParamOf(const Status& s) {
  if (!s.IsInvalidArgument()) return "";
  const std::string& msg = s.message();
  size_t colon = msg.find(": ");
  if (colon == 0 || colon == std::string::npos) return "";
  std::string param = msg.substr(0, colon);
  bool plain = std::all_of(param.begin(), param.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("_.[]-").find(c) != std::string_view::npos;
  });
  return plain ? param : "";
}

}  // namespace switchyard::frontends::anthropic
