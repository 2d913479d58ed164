// Character classes of tokenizer.json patterns, translated for PCRE2 (regex_translate.h).
// Mirrors the JS port's class parser for the forms PCRE2 can hold in one class: literals,
// ranges, escapes, properties, POSIX names and nested (non-negated) classes, which are a
// union; refuses intersections (`&&`), negated nested classes and their kin.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <memory>

#include "tokenizer/internal/regex_syntax.h"
#include "tokenizer/internal/regex_translate.h"
#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {
namespace {

// What the last item of a class was: it decides what a following '-' means.
enum class Tail { kNone, kScalar, kSet, kRange, kCompleteRange };

struct ClassBody {
  std::string fragment;  // the PCRE2 class body, without brackets
  Tail tail = Tail::kNone;
  bool negated = false;

  Status Append(const std::string& text, bool set_valued, size_t offset) {
    if (set_valued && tail == Tail::kRange) {
      return Refuse("a range with a set-valued end in a class", offset);
    }
    fragment += text;
    tail = tail == Tail::kRange ? Tail::kCompleteRange : set_valued ? Tail::kSet : Tail::kScalar;
    return Status::OK();
  }
};

// The class body for `[:name:]` (the JS port's table); "" when the name is not in it.
std::string PosixFragment(std::string_view name) {
  if (name == "alpha") return "\\p{Alphabetic}";
  if (name == "alnum") return "\\p{Alphabetic}\\p{Nd}";
  if (name == "digit") return "\\p{Nd}";
  if (name == "lower") return "\\p{Lowercase}";
  if (name == "upper") return "\\p{Uppercase}";
  if (name == "space") return "\\p{White_Space}";
  if (name == "blank") return "\\t\\p{Zs}";
  if (name == "punct") return "\\p{P}\\p{S}";
  if (name == "cntrl") return "\\p{Cc}";
  if (name == "word") return WordCharsInClass();
  if (name == "xdigit") return "0-9A-Fa-f";
  return "";
}

// The class text for a one-letter escape `\c` inside a class; `set` says whether it stands
// for a set of characters.
Status LetterInClass(char c, size_t offset, ClassBody* body) {
  switch (c) {
    case 'n':
      return body->Append("\\n", false, offset);
    case 'r':
      return body->Append("\\r", false, offset);
    case 't':
      return body->Append("\\t", false, offset);
    case 'f':
      return body->Append("\\f", false, offset);
    case 'v':
      return body->Append("\\x{0B}", false, offset);
    case 'a':
      return body->Append("\\x{07}", false, offset);
    case 'e':
      return body->Append("\\x{1B}", false, offset);
    case 'b':
      return body->Append("\\x{08}", false, offset);
    case 'h':
      return body->Append("0-9A-Fa-f", true, offset);
    case 'w':
      return body->Append(WordCharsInClass(), true, offset);
    case 'd':
      return body->Append("\\p{Nd}", true, offset);
    case 'D':
      return body->Append("\\P{Nd}", true, offset);
    case 's':
      return body->Append("\\p{White_Space}", true, offset);
    case 'S':
      return body->Append("\\P{White_Space}", true, offset);
    default:
      return Refuse(std::string("the escape \\") + c + " inside a class", offset);
  }
}

// The escape at s[i] == '\\' inside a class; returns its length.
Result<size_t> EscapeInClass(std::string_view s, size_t i, ClassBody* body) {
  if (auto braced = ParseBracedEscape(s, i)) {
    if (braced->kind == 'x' || braced->kind == 'u') {
      SY_ASSIGN_OR_RETURN(char32_t cp, HexCodePoint(braced->body, i));
      SY_RETURN_IF_ERROR(body->Append("\\x{" + Hex(cp) + "}", false, i));
    } else if (braced->body == "Word") {
      if (braced->kind == 'P') return Refuse("\\P{Word} inside a class", i);
      SY_RETURN_IF_ERROR(body->Append(WordCharsInClass(), true, i));
    } else {
      SY_RETURN_IF_ERROR(CheckPropertyName(braced->body, i));
      SY_RETURN_IF_ERROR(body->Append(std::string(s.substr(i, braced->length)), true, i));
    }
    return braced->length;
  }
  if (auto fixed = ParseFixedEscape(s, i)) {
    const std::string text =
        fixed->kind == 'c' ? std::string(s.substr(i, 3)) : "\\x{" + Hex(fixed->code_point) + "}";
    SY_RETURN_IF_ERROR(body->Append(text, false, i));
    return fixed->length;
  }
  if (i + 1 >= s.size()) return Refuse("a trailing backslash", i);
  size_t next = i + 1;
  const char32_t cp = NextCodePoint(s, &next);
  if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) {
    SY_RETURN_IF_ERROR(LetterInClass(static_cast<char>(cp), i, body));
  } else {
    std::string text;
    AppendLiteral(cp, &text);
    SY_RETURN_IF_ERROR(body->Append(text, false, i));
  }
  return next - i;
}

Result<size_t> ParseBody(std::string_view s, size_t start, ClassBody* body);

// A `[` inside a class at s[i]: a POSIX bracket or a nested class (a union). Returns the
// length it took.
Result<size_t> NestedInClass(std::string_view s, size_t i, ClassBody* body) {
  const std::string_view rest = s.substr(i);
  if (rest.starts_with("[.") || rest.starts_with("[=")) {
    return Refuse("a POSIX collating or equivalence bracket", i);
  }
  if (rest.starts_with("[:")) {
    const size_t close = rest.find(":]", 2);
    if (close != std::string_view::npos) {
      std::string_view name = rest.substr(2, close - 2);
      if (name.starts_with("^")) return Refuse("a negated POSIX class", i);
      const std::string fragment = PosixFragment(name);
      if (fragment.empty()) return Refuse("the POSIX class [:" + std::string(name) + ":]", i);
      SY_RETURN_IF_ERROR(body->Append(fragment, true, i));
      return close + 2;
    }
  }
  ClassBody nested;
  SY_ASSIGN_OR_RETURN(size_t end, ParseBody(s, i, &nested));
  if (nested.negated) return Refuse("a negated class inside a class", i);
  SY_RETURN_IF_ERROR(body->Append(nested.fragment, true, i));
  return end - i;
}

// Parses the class at s[start] == '[' into *body; returns the offset past its ']'.
Result<size_t> ParseBody(std::string_view s, size_t start, ClassBody* body) {
  size_t i = start + 1;
  body->negated = i < s.size() && s[i] == '^';
  if (body->negated) ++i;
  const size_t first = i;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ']' && i != first) {
      if (body->tail == Tail::kNone) return Refuse("an empty class", start);
      return i + 1;
    }
    size_t used = 1;
    if (c == ']') {
      SY_RETURN_IF_ERROR(body->Append("\\]", false, i));
    } else if (c == '\\') {
      SY_ASSIGN_OR_RETURN(used, EscapeInClass(s, i, body));
    } else if (s.substr(i).starts_with("&&")) {
      return Refuse("a class intersection (&&)", i);
    } else if (c == '[') {
      SY_ASSIGN_OR_RETURN(used, NestedInClass(s, i, body));
    } else if (c == '-') {
      const bool terminal =
          i + 1 < s.size() && (s[i + 1] == ']' || s.substr(i + 1).starts_with("&&"));
      if (body->tail == Tail::kSet && !terminal) {
        return Refuse("a range with a set-valued start in a class", i);
      }
      if (body->tail == Tail::kScalar && !terminal) {
        body->fragment += '-';
        body->tail = Tail::kRange;
      } else {
        SY_RETURN_IF_ERROR(body->Append("\\-", false, i));
      }
    } else {
      size_t next = i;
      const char32_t cp = NextCodePoint(s, &next);
      std::string text;
      AppendLiteral(cp, &text);
      SY_RETURN_IF_ERROR(body->Append(text, false, i));
      used = next - i;
    }
    i += used;
  }
  return Refuse("an unterminated class", start);
}

// The ASCII letters whose other case `[fragment]` lacks (what `(?i:` adds to a class).
Result<std::string> FoldAdditions(const std::string& fragment) {
  const std::string pattern = "[" + fragment + "]";
  int error = 0;
  PCRE2_SIZE offset = 0;
  std::unique_ptr<pcre2_code, decltype(&pcre2_code_free)> code(
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                    PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &error, &offset, nullptr),
      &pcre2_code_free);
  if (!code) return Status::NotSupported("the class " + pattern + " does not compile");
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code.get(), nullptr), &pcre2_match_data_free);
  auto has = [&](char c) {
    return pcre2_match(code.get(), reinterpret_cast<PCRE2_SPTR>(&c), 1, 0, 0, data.get(),
                       nullptr) >= 0;
  };
  std::string additions;
  for (char lower = 'a'; lower <= 'z'; ++lower) {
    const char upper = static_cast<char>(lower - 'a' + 'A');
    const bool l = has(lower), u = has(upper);
    if (l != u) additions += l ? upper : lower;
  }
  return additions;
}

}  // namespace

Result<ClassTranslation> TranslateClass(std::string_view source, size_t start, bool fold) {
  ClassBody body;
  SY_ASSIGN_OR_RETURN(size_t end, ParseBody(source, start, &body));
  if (fold) {
    SY_ASSIGN_OR_RETURN(std::string additions, FoldAdditions(body.fragment));
    body.fragment += additions;
  }
  return ClassTranslation{"[" + std::string(body.negated ? "^" : "") + body.fragment + "]", end};
}

}  // namespace switchyard::tokenizer::internal
