#include "http/fast_json.h"

#include <google/protobuf/descriptor.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace switchyard::http {
namespace {

namespace pb = google::protobuf;
using FD = pb::FieldDescriptor;

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  bool Document(pb::Message* msg) {
    if (!Object(msg, 0)) return false;
    Ws();
    return i_ == s_.size();
  }

 private:
  static constexpr int kMaxDepth = 16;

  void Ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t'))
      ++i_;
  }
  bool Eat(char c) {
    Ws();
    if (i_ < s_.size() && s_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }
  // A string without escapes or control characters (the subset), as a view into s_.
  bool String(std::string_view* out) {
    if (!Eat('"')) return false;
    size_t start = i_;
    while (i_ < s_.size() && s_[i_] != '"') {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '\\' || c < 0x20 || c >= 0x80) return false;  // escapes, non-ASCII: full parser
      ++i_;
    }
    if (i_ >= s_.size()) return false;
    *out = s_.substr(start, i_ - start);
    ++i_;
    return true;
  }
  // A JSON number token; `integral` when it has no fraction or exponent.
  bool Number(std::string_view* out, bool* integral) {
    Ws();
    size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
    if (s_[i_] == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
      return false;  // leading zeros are not JSON
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    *integral = true;
    if (i_ < s_.size() && s_[i_] == '.') {
      *integral = false;
      ++i_;
      size_t d = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ == d) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      *integral = false;
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      size_t d = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (i_ == d) return false;
    }
    *out = s_.substr(start, i_ - start);
    return true;
  }
  bool Literal(std::string_view word) {
    Ws();
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  template <typename T>
  static bool Integer(std::string_view tok, bool integral, T* out) {
    if (!integral) return false;  // protobuf accepts 1.0 for ints; leave that to it
    auto r = std::from_chars(tok.data(), tok.data() + tok.size(), *out);
    return r.ec == std::errc() && r.ptr == tok.data() + tok.size();
  }

  // One value for `f` (an element when f is repeated).
  bool Value(pb::Message* msg, const FD* f, int depth) {
    Ws();
    if (i_ >= s_.size()) return false;
    switch (f->cpp_type()) {
      case FD::CPPTYPE_MESSAGE: {
        const pb::Reflection* r = msg->GetReflection();
        pb::Message* sub = f->is_repeated() ? r->AddMessage(msg, f) : r->MutableMessage(msg, f);
        return Object(sub, depth + 1);
      }
      case FD::CPPTYPE_STRING:
        return StringValue(msg, f);
      case FD::CPPTYPE_ENUM:
        return EnumValue(msg, f);
      case FD::CPPTYPE_BOOL:
        return BoolValue(msg, f);
      default:
        break;
    }
    std::string_view tok;
    bool integral = false;
    if (!Number(&tok, &integral)) return false;
    return NumberValue(msg, f, tok, integral);
  }

  // A string value for the string field `f` (bytes fields are base64: left to protobuf).
  bool StringValue(pb::Message* msg, const FD* f) {
    const pb::Reflection* r = msg->GetReflection();
    std::string_view v;
    if (f->type() == FD::TYPE_BYTES || !String(&v)) return false;  // bytes are base64
    if (f->is_repeated())
      r->AddString(msg, f, std::string(v));
    else
      r->SetString(msg, f, std::string(v));
    return true;
  }

  // An enum value, by name, for the enum field `f`.
  bool EnumValue(pb::Message* msg, const FD* f) {
    const pb::Reflection* r = msg->GetReflection();
    std::string_view v;
    if (!String(&v)) return false;
    const pb::EnumValueDescriptor* e = f->enum_type()->FindValueByName(std::string(v));
    if (!e) return false;
    if (f->is_repeated())
      r->AddEnumValue(msg, f, e->number());
    else
      r->SetEnumValue(msg, f, e->number());
    return true;
  }

  // true or false for the bool field `f`.
  bool BoolValue(pb::Message* msg, const FD* f) {
    const pb::Reflection* r = msg->GetReflection();
    bool b;
    if (Literal("true"))
      b = true;
    else if (Literal("false"))
      b = false;
    else
      return false;
    if (f->is_repeated())
      r->AddBool(msg, f, b);
    else
      r->SetBool(msg, f, b);
    return true;
  }

  // The number token `tok` for the numeric field `f`; false when it does not fit the type.
  static bool NumberValue(pb::Message* msg, const FD* f, std::string_view tok, bool integral) {
    const pb::Reflection* r = msg->GetReflection();
    bool rep = f->is_repeated();
    switch (f->cpp_type()) {
      case FD::CPPTYPE_INT32: {
        int32_t v;
        if (!Integer(tok, integral, &v)) return false;
        rep ? r->AddInt32(msg, f, v) : r->SetInt32(msg, f, v);
        return true;
      }
      case FD::CPPTYPE_INT64: {
        int64_t v;
        if (!Integer(tok, integral, &v)) return false;
        rep ? r->AddInt64(msg, f, v) : r->SetInt64(msg, f, v);
        return true;
      }
      case FD::CPPTYPE_UINT32: {
        uint32_t v;
        if (tok[0] == '-' || !Integer(tok, integral, &v)) return false;
        rep ? r->AddUInt32(msg, f, v) : r->SetUInt32(msg, f, v);
        return true;
      }
      case FD::CPPTYPE_UINT64: {
        uint64_t v;
        if (tok[0] == '-' || !Integer(tok, integral, &v)) return false;
        rep ? r->AddUInt64(msg, f, v) : r->SetUInt64(msg, f, v);
        return true;
      }
      case FD::CPPTYPE_DOUBLE:
      case FD::CPPTYPE_FLOAT:
        return FloatingValue(msg, f, tok);
      default:
        return false;
    }
  }

  // The number token `tok` for the double or float field `f`; false when not finite or out
  // of a float's range.
  static bool FloatingValue(pb::Message* msg, const FD* f, std::string_view tok) {
    const pb::Reflection* r = msg->GetReflection();
    bool rep = f->is_repeated();
    std::string t(tok);
    char* end = nullptr;
    double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !std::isfinite(v)) return false;
    if (f->cpp_type() == FD::CPPTYPE_DOUBLE) {
      rep ? r->AddDouble(msg, f, v) : r->SetDouble(msg, f, v);
    } else {
      if (std::fabs(v) > std::numeric_limits<float>::max()) return false;
      rep ? r->AddFloat(msg, f, static_cast<float>(v)) : r->SetFloat(msg, f, static_cast<float>(v));
    }
    return true;
  }

  bool Object(pb::Message* msg, int depth) {
    if (depth > kMaxDepth || !Eat('{')) return false;
    const pb::Descriptor* d = msg->GetDescriptor();
    if (d->file()->package() == "google.protobuf") return false;  // well-known types
    std::vector<int> seen;  // field numbers (duplicates and oneof clashes fall back)
    if (Eat('}')) return true;
    do {
      std::string_view key;
      if (!String(&key) || !Eat(':')) return false;
      std::string k(key);
      const FD* f = d->FindFieldByName(k);
      for (int j = 0; !f && j < d->field_count(); ++j)
        if (d->field(j)->json_name() == k) f = d->field(j);
      if (!f || f->is_map()) return false;
      for (int n : seen) {
        if (n == f->number()) return false;
        const FD* other = d->FindFieldByNumber(n);
        if (f->real_containing_oneof() &&
            other->real_containing_oneof() == f->real_containing_oneof())
          return false;
      }
      seen.push_back(f->number());
      if (f->is_repeated()) {
        if (!Eat('[')) return false;
        if (!Eat(']')) {
          do {
            if (!Value(msg, f, depth)) return false;
          } while (Eat(','));
          if (!Eat(']')) return false;
        }
      } else if (!Value(msg, f, depth)) {
        return false;
      }
    } while (Eat(','));
    return Eat('}');
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

bool TryParseJson(std::string_view json, google::protobuf::Message* msg) {
  msg->Clear();
  return Parser(json).Document(msg);
}

}  // namespace switchyard::http
