// JsonObjectConstraint (json_constraint.h): the schema compiled for the byte automaton
// (internal/json_machine.h), and the walk of a vocabulary trie with it.
#include "cpu_engine/json_constraint.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace switchyard::cpu_engine {
namespace {

using json_internal::Kind;
using json_internal::Property;
using json_internal::Schema;
using nlohmann::json;

Status Bad(const std::string& what) { return Status::InvalidArgument("json schema: " + what); }

std::string Name(const std::string& key) { return "property " + json(key).dump(); }

Result<Kind> TypeKind(const json& type, const std::string& key) {
  if (type.is_array()) {
    for (const json& t : type)
      if (!t.is_string()) return Bad(Name(key) + ": \"type\" lists something not a string");
    return Kind::kAny;  // a list of types: any JSON value
  }
  if (!type.is_string()) return Bad(Name(key) + ": \"type\" is not a string or a list of strings");
  const std::string t = type.get<std::string>();
  if (t == "string") return Kind::kString;
  if (t == "number") return Kind::kNumber;
  if (t == "integer") return Kind::kInteger;
  if (t == "boolean") return Kind::kBoolean;
  if (t == "null") return Kind::kNull;
  if (t == "object") return Kind::kObject;
  if (t == "array") return Kind::kArray;
  return Bad(Name(key) + ": unknown type \"" + t + "\"");
}

Status AddEnum(const json& values, const std::string& key, Property* p, Schema* out) {
  if (!values.is_array() || values.empty())
    return Bad(Name(key) + ": \"enum\" is not a non-empty array");
  if (values.size() > static_cast<size_t>(json_internal::kMaxEnumValues))
    return Bad(Name(key) + ": \"enum\" has " + std::to_string(values.size()) +
               " values, more than " + std::to_string(json_internal::kMaxEnumValues));
  p->kind = Kind::kEnum;
  p->enum_first = static_cast<uint32_t>(out->texts.size());
  for (const json& v : values) {
    std::string t = v.dump();
    auto first = out->texts.begin() + p->enum_first;
    if (std::find(first, out->texts.end(), t) == out->texts.end()) out->texts.push_back(t);
  }
  p->enum_count = static_cast<uint32_t>(out->texts.size()) - p->enum_first;
  return Status::OK();
}

Status AddProperty(const std::string& key, const json* schema, Schema* out) {
  Property p;
  p.key_text = static_cast<uint32_t>(out->texts.size());
  out->texts.push_back(json(key).dump());
  if (schema && schema->is_boolean() && !schema->get<bool>())
    return Bad("required " + Name(key) + " has the schema false: no value matches it");
  if (schema && !schema->is_boolean()) {
    if (!schema->is_object()) return Bad(Name(key) + ": its schema is not an object");
    if (auto c = schema->find("const"); c != schema->end()) {
      SY_RETURN_IF_ERROR(AddEnum(json::array({*c}), key, &p, out));
    } else if (auto e = schema->find("enum"); e != schema->end()) {
      SY_RETURN_IF_ERROR(AddEnum(*e, key, &p, out));
    } else if (auto t = schema->find("type"); t != schema->end()) {
      SY_ASSIGN_OR_RETURN(p.kind, TypeKind(*t, key));
    }
  }
  out->props.push_back(p);
  return Status::OK();
}

Result<Schema> Compile(const json& doc) {
  if (!doc.is_object()) return Bad("not a JSON object but " + std::string(doc.type_name()));
  if (auto t = doc.find("type"); t != doc.end() && !(t->is_string() && *t == "object"))
    return Bad("\"type\" is " + t->dump() + ", not \"object\"");
  const json* props = nullptr;
  if (auto p = doc.find("properties"); p != doc.end()) {
    if (!p->is_object()) return Bad("\"properties\" is not an object");
    props = &*p;
  }
  Schema s;
  s.texts = {"true", "false", "null"};
  auto r = doc.find("required");
  if (r == doc.end()) return s;
  if (!r->is_array()) return Bad("\"required\" is not an array");
  std::vector<std::string> seen;
  for (const json& k : *r) {
    if (!k.is_string()) return Bad("\"required\" lists " + k.dump() + ", not a string");
    const std::string key = k.get<std::string>();
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      return Bad("\"required\" lists \"" + key + "\" twice");
    seen.push_back(key);
    const json* schema = nullptr;
    if (props)
      if (auto it = props->find(key); it != props->end()) schema = &*it;
    SY_RETURN_IF_ERROR(AddProperty(key, schema, &s));
  }
  return s;
}

}  // namespace

Result<JsonObjectConstraint> JsonObjectConstraint::FromSchema(std::string_view schema_json) {
  try {
    const json doc = json::parse(schema_json);
    SY_ASSIGN_OR_RETURN(Schema s, Compile(doc));
    return JsonObjectConstraint(std::make_shared<const Schema>(std::move(s)));
  } catch (const json::exception& e) {
    return Bad(std::string("not valid JSON: ") + e.what());
  }
}

bool JsonObjectConstraint::CanFeed(std::string_view bytes) const {
  json_internal::State st = state_;
  for (char c : bytes)
    if (!json_internal::Step(*schema_, &st, static_cast<uint8_t>(c))) return false;
  return true;
}

bool JsonObjectConstraint::Feed(std::string_view bytes) {
  json_internal::State st = state_;
  for (char c : bytes)
    if (!json_internal::Step(*schema_, &st, static_cast<uint8_t>(c))) return false;
  state_ = st;
  return true;
}

std::string JsonObjectConstraint::Completion() const {
  std::string out;
  json_internal::State st = state_;
  // Each byte moves toward the close; the bound only guards against a bug looping.
  for (int guard = 0; guard < (1 << 20); ++guard) {
    const int b = json_internal::NextCompletionByte(*schema_, st);
    if (b < 0 || !json_internal::Step(*schema_, &st, static_cast<uint8_t>(b))) break;
    out.push_back(static_cast<char>(b));
  }
  return out;
}

void JsonObjectConstraint::AllowedTokens(const TokenTrie& trie,
                                         std::vector<uint8_t>* allowed) const {
  allowed->assign(trie.vocab(), 0);
  if (complete()) return;
  // states[d]: the state after the first d bytes of the current path.
  std::vector<json_internal::State> states(trie.max_depth() + 1);
  states[0] = state_;
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  const std::vector<int32_t>& tokens = trie.tokens();
  const json_internal::Schema& schema = *schema_;
  for (size_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    json_internal::State& st = states[n.depth];
    st = states[n.depth - 1];
    if (!json_internal::Step(schema, &st, n.byte)) {
      i = n.end;  // no token under this prefix
      continue;
    }
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) (*allowed)[tokens[k]] = 1;
    ++i;
  }
}

}  // namespace switchyard::cpu_engine
