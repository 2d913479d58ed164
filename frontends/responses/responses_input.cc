// The input items of a Responses request (see responses_json.h): messages (typed or "easy",
// with text parts), function calls and their outputs, reasoning; hosted tools' items are
// left out and listed, what needs vision or server-side state is refused.
#include <set>

#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses::detail {
namespace {

// Items of the hosted tools this server leaves out (their tools are ignored too, see
// responses_tools.cc) and of Codex's freeform tools: accepted, left out, listed.
bool IsSkippedKind(const std::string& type) {
  return IsOneOf(
      " web_search_call file_search_call code_interpreter_call computer_call "
      " computer_call_output image_generation_call local_shell_call "
      " local_shell_call_output mcp_call mcp_list_tools mcp_approval_request "
      " mcp_approval_response custom_tool_call custom_tool_call_output shell_call "
      " shell_call_output apply_patch_call apply_patch_call_output tool_search_call "
      " tool_search_output compaction ",
      type);
}

void AppendLine(std::string* out, const std::string& text) {
  if (!out->empty()) *out += '\n';
  *out += text;
}

// A refusal for what needs more than text.
Status NoVision(const std::string& type_path, const std::string& type) {
  return Bad(type_path, Quoted(type) + " is not supported: this server reads text only");
}

// One content part of a message or a function_call_output: its text appended to *out.
Status ParseTextPart(const Json& part, const std::string& p, std::string* out) {
  if (!part.is_object()) return WrongType(p, part, "an object");
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(part, p, "type", &type));
  if (type == "input_image" || type == "input_file" || type == "input_audio") {
    return NoVision(p + ".type", type);
  }
  const char* key = type == "refusal" ? "refusal" : "text";
  if (type != "input_text" && type != "output_text" && type != "refusal") {
    return Bad(p + ".type", "unsupported content part type " + Quoted(type) +
                                " (expected input_text, output_text or refusal)");
  }
  if (Get(part, key) == nullptr) return Bad(Path(p, key), "required");
  std::string text;
  SY_RETURN_IF_ERROR(ReadString(part, p, key, &text));
  AppendLine(out, text);
  return Status::OK();
}

// A string, or an array of text parts joined with "\n".
Status ParseText(const Json& v, const std::string& p, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return Status::OK();
  }
  if (!v.is_array()) return WrongType(p, v, "a string or an array of content parts");
  for (size_t i = 0; i < v.size(); ++i) {
    SY_RETURN_IF_ERROR(ParseTextPart(v[i], Indexed(p, i), out));
  }
  return Status::OK();
}

Status ParseRequiredString(const Json& j, const std::string& p, const char* key, std::string* out) {
  if (Get(j, key) == nullptr) return Bad(Path(p, key), "required");
  SY_RETURN_IF_ERROR(ReadString(j, p, key, out));
  if (out->empty()) return Bad(Path(p, key), "must not be empty");
  return Status::OK();
}

Status ParseMessage(const Json& j, const std::string& p, Item* item) {
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant"};
  item->kind = Item::Kind::kMessage;
  SY_RETURN_IF_ERROR(ParseRequiredString(j, p, "role", &item->role));
  if (!kRoles.count(item->role)) {
    return Bad(p + ".role", "unknown role " + Quoted(item->role) +
                                " (expected system, developer, user or assistant)");
  }
  const Json* content = Get(j, "content");
  if (content == nullptr) return Bad(p + ".content", "required");
  return ParseText(*content, p + ".content", &item->text);
}

Status ParseCall(const Json& j, const std::string& p, Item* item) {
  item->kind = Item::Kind::kFunctionCall;
  SY_RETURN_IF_ERROR(ParseRequiredString(j, p, "call_id", &item->call_id));
  SY_RETURN_IF_ERROR(ParseRequiredString(j, p, "name", &item->name));
  SY_RETURN_IF_ERROR(ReadString(j, p, "namespace", &item->tool_namespace));
  const Json* args = Get(j, "arguments");
  if (args == nullptr) return Bad(p + ".arguments", "required");
  if (args->is_object()) {  // not the spec, but some clients echo the object back
    item->arguments = Dump(*args);
    return Status::OK();
  }
  return ReadString(j, p, "arguments", &item->arguments);
}

Status ParseCallOutput(const Json& j, const std::string& p, Item* item) {
  item->kind = Item::Kind::kFunctionCallOutput;
  SY_RETURN_IF_ERROR(ParseRequiredString(j, p, "call_id", &item->call_id));
  const Json* output = Get(j, "output");
  if (output == nullptr) return Bad(p + ".output", "required");
  return ParseText(*output, p + ".output", &item->text);
}

// Reasoning is kept for listings only: its summary texts, leniently.
void ParseReasoning(const Json& j, Item* item) {
  item->kind = Item::Kind::kReasoning;
  const Json* summary = Get(j, "summary");
  if (summary == nullptr || !summary->is_array()) return;
  for (const Json& s : *summary) {
    if (s.is_object() && s.contains("text") && s["text"].is_string()) {
      AppendLine(&item->text, s["text"].get<std::string>());
    }
  }
}

Status ParseByType(const Json& j, const std::string& p, const std::string& type, Item* item) {
  if (type == "message") return ParseMessage(j, p, item);
  if (type == "function_call") return ParseCall(j, p, item);
  if (type == "function_call_output") return ParseCallOutput(j, p, item);
  if (type == "reasoning") {
    ParseReasoning(j, item);
    return Status::OK();
  }
  if (type == "item_reference") {
    return Bad(p + ".type", "item_reference is not supported; send the item itself");
  }
  return Bad(p + ".type", "unknown item type " + Quoted(type));
}

}  // namespace

Result<std::optional<Item>> ParseItem(const Json& j, const std::string& p,
                                      std::string* skipped_kind) {
  if (!j.is_object()) return WrongType(p, j, "an object");
  std::string type;
  SY_RETURN_IF_ERROR(ReadString(j, p, "type", &type));
  if (type.empty()) {
    if (Get(j, "role") == nullptr) return Bad(p + ".type", "required");
    type = "message";  // an "easy" input message: {role, content}
  }
  if (IsSkippedKind(type)) {
    *skipped_kind = type;
    return std::optional<Item>();
  }
  Item item;
  SY_RETURN_IF_ERROR(ReadString(j, p, "id", &item.id));
  SY_RETURN_IF_ERROR(ReadString(j, p, "status", &item.status));
  SY_RETURN_IF_ERROR(ParseByType(j, p, type, &item));
  return std::optional<Item>(std::move(item));
}

Status ParseInput(const Json& body, CreateRequest* r) {
  const Json* v = Get(body, "input");
  if (v == nullptr) {
    if (r->previous_response_id.empty()) return Bad("input", "required");
    return Status::OK();
  }
  if (v->is_string()) {
    r->input.push_back(Item{.role = "user", .text = v->get<std::string>()});
    return Status::OK();
  }
  if (!v->is_array()) return WrongType("input", *v, "a string or an array of items");
  std::set<std::string> listed;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string p = Indexed("input", i);
    std::string skipped;
    SY_ASSIGN_OR_RETURN(std::optional<Item> item, ParseItem((*v)[i], p, &skipped));
    if (item && item->kind == Item::Kind::kReasoning) skipped = "reasoning";
    if (!skipped.empty() && listed.insert(skipped).second) {
      r->ignored.push_back(p + " (" + skipped + ")");
    }
    if (item) r->input.push_back(std::move(*item));
  }
  return Status::OK();
}

}  // namespace switchyard::frontends::responses::detail
