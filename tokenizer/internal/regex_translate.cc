#include "tokenizer/internal/regex_translate.h"

#include <cctype>
#include <optional>
#include <vector>

#include "tokenizer/internal/regex_syntax.h"
#include "tokenizer/internal/unicode.h"

namespace switchyard::tokenizer::internal {
namespace {

// What one escape outside a class became, and how many source bytes it took.
struct Escape {
  std::string text;
  size_t length = 0;
};

// `\p{..}` `\P{..}` `\x{..}` `\u{..}`, `\xHH` `\uHHHH` `\cX` outside a class; nullopt when
// the escape at `i` is none of these.
Result<std::optional<Escape>> CodedEscape(std::string_view s, size_t i, bool fold) {
  auto braced = ParseBracedEscape(s, i);
  if (braced) {
    if (braced->kind == 'x' || braced->kind == 'u') {
      SY_ASSIGN_OR_RETURN(char32_t cp, HexCodePoint(braced->body, i));
      std::string text = fold ? FoldedLetter(cp) : "";
      if (text.empty()) text = "\\x{" + braced->body + "}";
      return std::optional<Escape>(Escape{text, braced->length});
    }
    if (braced->body == "Word") {
      const std::string word = WordCharsOutsideClass();
      return std::optional<Escape>(
          Escape{braced->kind == 'p' ? "[" + word + "]" : "[^" + word + "]", braced->length});
    }
    SY_RETURN_IF_ERROR(CheckPropertyName(braced->body, i));
    return std::optional<Escape>(Escape{std::string(s.substr(i, braced->length)), braced->length});
  }
  auto fixed = ParseFixedEscape(s, i);
  if (!fixed) return std::optional<Escape>();
  std::string text = fixed->kind == 'c' ? std::string(s.substr(i, 3)) : "";
  if (fixed->kind != 'c') {
    text = fold ? FoldedLetter(fixed->code_point) : "";
    if (text.empty()) text = "\\x{" + Hex(fixed->code_point) + "}";
  }
  return std::optional<Escape>(Escape{text, fixed->length});
}

// The rewrite of a one-letter escape `\c` outside a class (the JS port's table).
Result<std::string> LetterEscape(char c, size_t offset) {
  const std::string ws = "\\p{White_Space}";
  switch (c) {
    case 'n':
      return std::string("\\n");
    case 'r':
      return std::string("\\r");
    case 't':
      return std::string("\\t");
    case 'f':
      return std::string("\\f");
    case 'v':
      return std::string("\\x{0B}");
    case 'a':
      return std::string("\\x{07}");
    case 'e':
      return std::string("\\x{1B}");
    case 'A':
      return std::string("(?<![\\s\\S])");
    case 'z':
      return std::string("(?![\\s\\S])");
    case 'Z':
      return std::string("(?=\\n?(?![\\s\\S]))");
    case 'h':
      return std::string("[0-9A-Fa-f]");
    case 'H':
      return std::string("[^0-9A-Fa-f]");
    case 'd':
      return std::string("\\p{Nd}");
    case 'D':
      return std::string("\\P{Nd}");
    case 's':
      return "[" + ws + "]";
    case 'S':
      return "[^" + ws + "]";
    case 'w':
      return "[" + WordCharsOutsideClass() + "]";
    case 'W':
      return "[^" + WordCharsOutsideClass() + "]";
    case 'b':
      return WordBoundary(true);
    case 'B':
      return WordBoundary(false);
    case 'G':
      return Refuse("\\G (continuing anchor)", offset);
    default:
      return Refuse(std::string("the escape \\") + c + " (back-references and other escapes)",
                    offset);
  }
}

// Translates the escape at s[i] == '\\' outside a class.
Result<Escape> EscapeOutsideClass(std::string_view s, size_t i, bool fold) {
  SY_ASSIGN_OR_RETURN(std::optional<Escape> coded, CodedEscape(s, i, fold));
  if (coded) return *coded;
  if (i + 1 >= s.size()) return Refuse("a trailing backslash", i);
  size_t next = i + 1;
  const char32_t cp = NextCodePoint(s, &next);
  if (cp < 0x80 && std::isalnum(static_cast<int>(cp))) {
    SY_ASSIGN_OR_RETURN(std::string text, LetterEscape(static_cast<char>(cp), i));
    return Escape{text, next - i};
  }
  std::string text;
  AppendLiteral(cp, &text);
  return Escape{text, next - i};
}

// Group openings the JS port knows; `prefix` is what to emit, `length` what it consumed.
struct GroupOpen {
  std::string prefix;
  size_t length = 0;
  bool fold = false;
};

Result<GroupOpen> OpenGroup(std::string_view s, size_t i) {
  const std::string_view rest = s.substr(i);
  if (rest.starts_with("(?i:")) return GroupOpen{"(?:", 4, true};
  if (rest.starts_with("(?>")) return GroupOpen{"(?:", 3, false};
  for (std::string_view p : {"(?:", "(?=", "(?!", "(?<=", "(?<!"}) {
    if (rest.starts_with(p)) return GroupOpen{std::string(p), p.size(), false};
  }
  if (rest.starts_with("(?<")) {
    size_t j = 3;
    while (j < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[j])) || rest[j] == '_'))
      ++j;
    if (j > 3 && j < rest.size() && rest[j] == '>' && !std::isdigit((unsigned char)rest[3])) {
      return GroupOpen{std::string(rest.substr(0, j + 1)), j + 1, false};
    }
  }
  if (rest.starts_with("(?")) return Refuse("the group syntax (? (inline flags, comments)", i);
  return GroupOpen{"(", 1, false};
}

}  // namespace

void AppendLiteral(char32_t cp, std::string* out) {
  if (cp < 0x20 || cp == 0x7F) {
    out->append("\\x{" + Hex(cp) + "}");
  } else if (cp < 0x80 && !std::isalnum(static_cast<int>(cp)) && cp != ' ') {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
  } else {
    AppendUtf8(cp, out);
  }
}

// The translation state of TranslatePattern: mirrors the JS port's rewrite, which tracks
// where the last atom began (a `{n,m}+` wraps it) and whether a quantifier came last.
namespace {

struct Translator {
  std::string out;
  long atom_start = -1;
  bool last_was_quantifier = false;
  bool fold = false;
  std::vector<std::pair<long, bool>> groups;  // (output offset, fold) of each open group

  void Atom(const std::string& text) {
    atom_start = static_cast<long>(out.size());
    out += text;
    last_was_quantifier = false;
  }
  // `{...}` at s[i]: a quantifier after an atom, else a literal brace. Returns the length.
  size_t Brace(std::string_view s, size_t i) {
    auto q = ParseBraceQuantifier(s, i);
    if (!q || atom_start < 0) {
      Atom("\\{");
      return 1;
    }
    size_t used = q->length;
    const char following = i + used < s.size() ? s[i + used] : '\0';
    if (following == '+' || following == '*') {
      out = out.substr(0, atom_start) + "(?:" + out.substr(atom_start) + q->pcre2 + ")" + following;
      ++used;
    } else {
      out += q->pcre2;
    }
    last_was_quantifier = true;
    return used;
  }
  Result<size_t> Step(std::string_view s, size_t i);
};

Result<size_t> Translator::Step(std::string_view s, size_t i) {
  size_t next = i;
  const char32_t c = NextCodePoint(s, &next);
  switch (c) {
    case '\\': {
      SY_ASSIGN_OR_RETURN(Escape e, EscapeOutsideClass(s, i, fold));
      Atom(e.text);
      return e.length;
    }
    case '[': {
      SY_ASSIGN_OR_RETURN(ClassTranslation cls, TranslateClass(s, i, fold));
      Atom(cls.atom);
      return cls.end - i;
    }
    case ']':
      Atom("\\]");
      return 1;
    case '}':
      Atom("\\}");
      return 1;
    case '.':
      Atom("[^\\n]");
      return 1;
    case '^':
      Atom("(?:(?<![\\s\\S])|(?<=\\n))");
      return 1;
    case '$':
      Atom("(?:(?=\\n)|(?![\\s\\S]))");
      return 1;
    case '{':
      return Brace(s, i);
    case '(': {
      SY_ASSIGN_OR_RETURN(GroupOpen g, OpenGroup(s, i));
      groups.emplace_back(static_cast<long>(out.size()), fold);
      fold = fold || g.fold;
      out += g.prefix;
      last_was_quantifier = false;
      return g.length;
    }
    case ')':
      if (groups.empty()) return Refuse("an unbalanced ')'", i);
      out += ')';
      std::tie(atom_start, fold) = groups.back();
      groups.pop_back();
      last_was_quantifier = false;
      return 1;
    case '|':
      out += '|';
      atom_start = -1;
      last_was_quantifier = false;
      return 1;
    case '+':
      if (!last_was_quantifier) out += '+';  // `X++` (possessive) is `X+`, as in the JS port
      last_was_quantifier = true;
      return 1;
    case '*':
    case '?':
      out += static_cast<char>(c);
      last_was_quantifier = true;
      return 1;
    default: {
      std::string text = fold ? FoldedLetter(c) : "";
      if (text.empty()) AppendLiteral(c, &text);
      Atom(text);
      return next - i;
    }
  }
}

}  // namespace

Result<std::string> TranslatePattern(std::string_view pattern) {
  if (FirstInvalidUtf8(pattern) >= 0) return Status::InvalidArgument("pattern is not UTF-8");
  Translator t;
  for (size_t i = 0; i < pattern.size();) {
    SY_ASSIGN_OR_RETURN(size_t used, t.Step(pattern, i));
    i += used;
  }
  if (!t.groups.empty()) return Refuse("an unclosed '('", pattern.size());
  return t.out;
}

std::string QuoteLiteral(std::string_view literal) {
  std::string out;
  for (size_t i = 0; i < literal.size();) AppendLiteral(NextCodePoint(literal, &i), &out);
  return out;
}

std::string Gpt2Pattern() {
  // JavaScript's \s: WhiteSpace and LineTerminator of ECMA-262.
  const std::string ws =
      "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
      "\\x{205F}\\x{3000}\\x{FEFF}";
  return "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" + ws + "\\p{L}\\p{N}]+|[" + ws +
         "]+(?![^" + ws + "])|[" + ws + "]+";
}

}  // namespace switchyard::tokenizer::internal
