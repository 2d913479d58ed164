// The tools and tool_choice of a Responses request (see responses_json.h): function tools,
// namespace tools flattened into their functions, hosted tools left out and listed.
#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "frontends/responses/responses_json.h"

namespace switchyard::frontends::responses::detail {
namespace {

// Tools that run on OpenAI's side (and Codex's freeform and tool-search tools): accepted,
// left out of the model's tools, listed in CreateRequest::ignored.
bool IsHostedTool(const std::string& type) {
  return IsOneOf(
      " web_search web_search_preview web_search_preview_2025_03_11 web_search_2025_08_26 "
      " file_search code_interpreter computer_use_preview computer_use image_generation "
      " local_shell mcp custom tool_search shell apply_patch ",
      type);
}

bool ValidToolName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

// A function as declared: where (its path, its namespace) and what.
struct Declared {
  std::string path, tool_namespace;
  ToolDef def;  // def.name: the name in its namespace until flattened
  std::string flat_name;
};

Result<ToolDef> ParseFunction(const Json& t, const std::string& p) {
  ToolDef def;
  if (Get(t, "name") == nullptr) return Bad(p + ".name", "required");
  SY_RETURN_IF_ERROR(ReadString(t, p, "name", &def.name));
  if (!ValidToolName(def.name)) {
    return Bad(p + ".name", "must be 1-64 characters of a-z, A-Z, 0-9, _ and -");
  }
  SY_RETURN_IF_ERROR(ReadString(t, p, "description", &def.description));
  const Json* params = nullptr;
  SY_RETURN_IF_ERROR(ReadObject(t, p, "parameters", &params));
  if (params != nullptr) def.parameters_json = Dump(*params);
  bool strict = false;
  SY_RETURN_IF_ERROR(ReadBool(t, p, "strict", &strict));
  return def;
}

std::string TypeOf(const Json& t, const std::string& p, Status* error) {
  std::string type;
  *error = ReadString(t, p, "type", &type);
  if (error->ok() && type.empty()) *error = Bad(p + ".type", "required");
  return type;
}

Status ParseNamespace(const Json& t, const std::string& p, std::vector<Declared>* out,
                      std::vector<std::string>* ignored) {
  std::string ns;
  if (Get(t, "name") == nullptr) return Bad(p + ".name", "required");
  SY_RETURN_IF_ERROR(ReadString(t, p, "name", &ns));
  if (ns.empty()) return Bad(p + ".name", "must not be empty");
  std::string description;
  SY_RETURN_IF_ERROR(ReadString(t, p, "description", &description));
  const Json* tools = Get(t, "tools");
  if (tools == nullptr) return Bad(p + ".tools", "required");
  if (!tools->is_array()) return WrongType(p + ".tools", *tools, "an array");
  for (size_t i = 0; i < tools->size(); ++i) {
    const std::string ip = Indexed(p + ".tools", i);
    const Json& f = (*tools)[i];
    if (!f.is_object()) return WrongType(ip, f, "an object");
    Status error;
    std::string type = TypeOf(f, ip, &error);
    SY_RETURN_IF_ERROR(error);
    if (type == "custom") {
      ignored->push_back(ip + " (custom)");
      continue;
    }
    if (type != "function") return Bad(ip + ".type", "expected function or custom");
    SY_ASSIGN_OR_RETURN(ToolDef def, ParseFunction(f, ip));
    out->push_back(Declared{ip, ns, std::move(def), ""});
  }
  return Status::OK();
}

// "<namespace>__<name>", or "<namespace><name>" when the namespace ends in '_'.
std::string Qualified(const std::string& ns, const std::string& name) {
  return ns + (ns.back() == '_' ? "" : "__") + name;
}

// Flat names: top-level functions keep theirs (unique), then each namespaced function keeps
// its own unless taken, else is qualified by its namespace.
Status AssignFlatNames(std::vector<Declared>* declared) {
  std::set<std::string> taken;
  for (Declared& d : *declared) {
    if (!d.tool_namespace.empty()) continue;
    if (!taken.insert(d.def.name).second) {
      return Bad(d.path + ".name", "duplicate tool name " + Quoted(d.def.name));
    }
    d.flat_name = d.def.name;
  }
  std::set<std::pair<std::string, std::string>> namespaced;
  for (Declared& d : *declared) {
    if (d.tool_namespace.empty()) continue;
    std::string flat = d.def.name;
    if (taken.count(flat)) flat = Qualified(d.tool_namespace, d.def.name);
    if (!namespaced.emplace(d.tool_namespace, d.def.name).second || !ValidToolName(flat) ||
        !taken.insert(flat).second) {
      return Bad(d.path + ".name", "duplicate tool name " + Quoted(d.def.name) + " in namespace " +
                                       Quoted(d.tool_namespace));
    }
    d.flat_name = std::move(flat);
  }
  return Status::OK();
}

}  // namespace

Status ParseTools(const Json& body, CreateRequest* r) {
  const Json* v = Get(body, "tools");
  if (v == nullptr) return Status::OK();
  if (!v->is_array()) return WrongType("tools", *v, "an array");
  std::vector<Declared> declared;
  Json honoured = Json::array();
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string p = Indexed("tools", i);
    const Json& t = (*v)[i];
    if (!t.is_object()) return WrongType(p, t, "an object");
    Status error;
    std::string type = TypeOf(t, p, &error);
    SY_RETURN_IF_ERROR(error);
    if (type == "function") {
      SY_ASSIGN_OR_RETURN(ToolDef def, ParseFunction(t, p));
      declared.push_back(Declared{p, "", std::move(def), ""});
    } else if (type == "namespace") {
      SY_RETURN_IF_ERROR(ParseNamespace(t, p, &declared, &r->ignored));
    } else if (IsHostedTool(type)) {
      r->ignored.push_back(p + " (" + type + ")");
      continue;
    } else {
      return Bad(p + ".type", "unknown tool type " + Quoted(type));
    }
    honoured.push_back(t);
  }
  SY_RETURN_IF_ERROR(AssignFlatNames(&declared));
  for (Declared& d : declared) {
    r->routes.push_back(ToolRoute{d.flat_name, d.tool_namespace, d.def.name});
    d.def.name = d.flat_name;
    r->tools.push_back(std::move(d.def));
  }
  r->tools_json = Dump(honoured);
  return Status::OK();
}

namespace {

Status ParseNamedChoice(const Json& v, CreateRequest* r) {
  std::string type, name, ns;
  SY_RETURN_IF_ERROR(ReadString(v, "tool_choice", "type", &type));
  if (type == "allowed_tools") return Bad("tool_choice.type", "allowed_tools is not supported");
  if (IsHostedTool(type)) {
    return Bad("tool_choice.type",
               Quoted(type) + " is a hosted tool, which this server does not run");
  }
  if (type != "function") return Bad("tool_choice.type", "expected \"function\"");
  if (Get(v, "name") == nullptr) return Bad("tool_choice.name", "required");
  SY_RETURN_IF_ERROR(ReadString(v, "tool_choice", "name", &name));
  SY_RETURN_IF_ERROR(ReadString(v, "tool_choice", "namespace", &ns));
  std::optional<std::string> flat = FlatNameOf(r->routes, ns, name);
  if (!flat) return Bad("tool_choice.name", "no function named " + Quoted(name) + " in tools");
  r->tool_choice = {ToolChoice::Kind::kFunction, *flat};
  return Status::OK();
}

}  // namespace

Status ParseToolChoice(const Json& body, CreateRequest* r) {
  const Json* v = Get(body, "tool_choice");
  if (v == nullptr) return Status::OK();
  r->tool_choice_json = Dump(*v);
  if (v->is_object()) return ParseNamedChoice(*v, r);
  if (!v->is_string()) return WrongType("tool_choice", *v, "a string or an object");
  const std::string& s = v->get_ref<const std::string&>();
  if (s == "auto") {
    r->tool_choice.kind = ToolChoice::Kind::kAuto;
  } else if (s == "none") {
    r->tool_choice.kind = ToolChoice::Kind::kNone;
  } else if (s == "required") {
    if (r->tools.empty()) return Bad("tool_choice", "\"required\" needs function tools");
    r->tool_choice.kind = ToolChoice::Kind::kRequired;
  } else {
    return Bad("tool_choice",
               "expected \"auto\", \"none\", \"required\" or a function, got " + Quoted(s));
  }
  return Status::OK();
}

}  // namespace switchyard::frontends::responses::detail
