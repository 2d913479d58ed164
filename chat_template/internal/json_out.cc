// Values written as JSON the way the reference's tojson does: see json_out.h.
#include "chat_template/internal/json_out.h"

#include <algorithm>
#include <cstdio>

#include "chat_template/internal/error.h"
#include "chat_template/internal/js_number.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

constexpr int kMaxJsonDepth = 512;

void AppendEscapedUnit(std::string& out, uint32_t unit) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "\\u%04x", unit);
  out += buf;
}

std::string MakeAsciiSafe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(s, i, &cp);
    if (cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      AppendEscapedUnit(out, cp);
    } else {
      AppendEscapedUnit(out, 0xD800 + ((cp - 0x10000) >> 10));
      AppendEscapedUnit(out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
    }
    i += n;
  }
  return out;
}

class Writer {
 public:
  explicit Writer(const JsonFormat& f) : f_(f) {
    if (f.separators) {
      item_sep_ = f.separators->first, key_sep_ = f.separators->second;
    } else {
      item_sep_ = f.indent > 0 ? "," : ", ";
      key_sep_ = ": ";
    }
  }

  void Write(const Value& v, int depth);
  std::string& out() { return out_; }

 private:
  void Append(std::string_view s) {
    if (out_.size() + s.size() > f_.max_bytes) Fail({}, "tojson output exceeds the output limit");
    out_.append(s);
  }
  void String(std::string_view s) {
    const std::string q = JsonQuote(s);
    Append(f_.ensure_ascii ? MakeAsciiSafe(q) : q);
  }
  void Padding(int depth) {
    Append("\n");
    for (int i = 0; i < depth * f_.indent; ++i) Append(" ");
  }
  void List(const std::vector<Value>& items, int depth);
  void Dict(const ObjectData& dict, int depth);

  const JsonFormat& f_;
  std::string item_sep_, key_sep_;
  std::string out_;
};

void Writer::List(const std::vector<Value>& items, int depth) {
  Append("[");
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) Append(item_sep_);
    if (f_.indent > 0) Padding(depth + 1);
    Write(items[i], depth + 1);
  }
  if (f_.indent > 0 && !items.empty()) Padding(depth);
  Append("]");
}

void Writer::Dict(const ObjectData& dict, int depth) {
  std::vector<const std::pair<std::string, Value>*> entries;
  for (const auto& e : dict.entries()) entries.push_back(&e);
  if (f_.sort_keys) {
    std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
      return CompareUtf16(a->first, b->first) < 0;
    });
  }
  Append("{");
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) Append(item_sep_);
    if (f_.indent > 0) Padding(depth + 1);
    String(entries[i]->first);
    Append(key_sep_);
    Write(entries[i]->second, depth + 1);
  }
  if (f_.indent > 0 && !entries.empty()) Padding(depth);
  Append("}");
}

void Writer::Write(const Value& v, int depth) {
  if (depth > kMaxJsonDepth) Fail({}, "tojson: value nests deeper than 512 levels");
  switch (v.kind()) {
    case Kind::kNull:
      return Append("null");
    case Kind::kUndefined:
      return Append(f_.undefined_as_null ? "null" : "undefined");
    case Kind::kBool:
      return Append(v.boolean() ? "true" : "false");
    case Kind::kInt:
    case Kind::kFloat:
      return Append(JsonNumber(v.num()));
    case Kind::kString:
      return String(v.str());
    case Kind::kArray:
      return List(v.items(), depth);
    case Kind::kObject:
    case Kind::kNamespace:
      return Dict(v.dict(), depth);
    default:
      Fail({}, std::string("cannot convert ") + KindName(v) + " to JSON");
  }
}

}  // namespace

std::string JsonQuote(std::string_view s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          AppendEscapedUnit(out, c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

std::string ToJson(const Value& v, const JsonFormat& format) {
  Writer w(format);
  w.Write(v, 0);
  return std::move(w.out());
}

}  // namespace switchyard::chat_template::internal
