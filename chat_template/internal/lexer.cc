// The tokenizer of the Jinja subset: see lexer.h.
#include "chat_template/internal/lexer.h"

#include "chat_template/internal/preprocess.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {

const char* TokName(Tok t) {
  switch (t) {
    case Tok::kText:
      return "text";
    case Tok::kNumber:
      return "number";
    case Tok::kString:
      return "string";
    case Tok::kIdent:
      return "name";
    case Tok::kEquals:
      return "'='";
    case Tok::kLParen:
      return "'('";
    case Tok::kRParen:
      return "')'";
    case Tok::kOpenStmt:
      return "'{%'";
    case Tok::kCloseStmt:
      return "'%}'";
    case Tok::kOpenExpr:
      return "'{{'";
    case Tok::kCloseExpr:
      return "'}}'";
    case Tok::kLBracket:
      return "'['";
    case Tok::kRBracket:
      return "']'";
    case Tok::kLBrace:
      return "'{'";
    case Tok::kRBrace:
      return "'}'";
    case Tok::kComma:
      return "','";
    case Tok::kDot:
      return "'.'";
    case Tok::kColon:
      return "':'";
    case Tok::kPipe:
      return "'|'";
    case Tok::kAdditive:
      return "operator";
    case Tok::kMultiplicative:
      return "operator";
    case Tok::kPower:
      return "'**'";
    case Tok::kCompare:
      return "comparison";
    case Tok::kUnary:
      return "unary operator";
    case Tok::kComment:
      return "comment";
  }
  return "token";
}

namespace {

struct Rule {
  const char* seq;
  Tok type;
};

// The operator and punctuation table, longest first for each leading character.
constexpr Rule kRules[] = {
    {"{%", Tok::kOpenStmt},
    {"{{", Tok::kOpenExpr},
    {"{", Tok::kLBrace},
    {"}}", Tok::kCloseExpr},
    {"}", Tok::kRBrace},
    {"%}", Tok::kCloseStmt},
    {"%", Tok::kMultiplicative},
    {"(", Tok::kLParen},
    {")", Tok::kRParen},
    {"[", Tok::kLBracket},
    {"]", Tok::kRBracket},
    {",", Tok::kComma},
    {".", Tok::kDot},
    {":", Tok::kColon},
    {"|", Tok::kPipe},
    {"<=", Tok::kCompare},
    {"<", Tok::kCompare},
    {">=", Tok::kCompare},
    {">", Tok::kCompare},
    {"==", Tok::kCompare},
    {"=", Tok::kEquals},
    {"!=", Tok::kCompare},
    {"+", Tok::kAdditive},
    {"-", Tok::kAdditive},
    {"~", Tok::kAdditive},
    {"**", Tok::kPower},
    {"*", Tok::kMultiplicative},
    {"//", Tok::kMultiplicative},
    {"/", Tok::kMultiplicative},
};

bool IsWord(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsAsciiDigit(c) || c == '_';
}
int HexDigit(int c) {
  if (IsAsciiDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(const MappedText& text, const SourceIndex& index)
      : src_(text.text), origin_(text.origin), index_(index) {}

  std::vector<Token> Run();

 private:
  int At(size_t i) const { return i < src_.size() ? static_cast<unsigned char>(src_[i]) : -1; }
  Pos PosAt(size_t i) const {
    return index_.At(i < origin_.size() ? origin_[i] : (origin_.empty() ? 0 : origin_.back() + 1));
  }
  [[noreturn]] void Error(size_t at, std::string msg) const { Fail(PosAt(at), std::move(msg)); }
  void Push(Tok type, std::string value, size_t start) {
    tokens_.push_back(Token{type, std::move(value), PosAt(start)});
  }
  Tok Last() const { return tokens_.empty() ? Tok::kComment : tokens_.back().type; }
  bool NoTokens() const { return tokens_.empty(); }

  bool LexText();
  bool LexTagOpen();
  bool LexCloseWithStrip();
  bool LexSigned();
  bool LexRule();
  void LexString(int quote);
  uint32_t LexHexEscape(size_t len);
  void LexNumber();
  size_t SkipSpaces(size_t i) const;
  void ConsumeSpaces();
  std::string ConsumeDigits();
  void StripTrailingWhitespace();

  const std::string& src_;
  const std::vector<uint32_t>& origin_;
  const SourceIndex& index_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int curly_ = 0;
};

size_t Lexer::SkipSpaces(size_t i) const {
  while (i < src_.size()) {
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(src_, i, &cp);
    if (!IsJsSpace(cp)) break;
    i += n;
  }
  return i;
}

// Whitespace between tokens; running into the end of the source is an error.
void Lexer::ConsumeSpaces() {
  const size_t end = SkipSpaces(pos_);
  if (end > pos_ && end >= src_.size()) Error(end, "unexpected end of template");
  pos_ = end;
}

std::string Lexer::ConsumeDigits() {
  const size_t start = pos_;
  while (IsAsciiDigit(At(pos_))) {
    if (++pos_ >= src_.size()) Error(pos_, "unexpected end of template");
  }
  return src_.substr(start, pos_ - start);
}

void Lexer::StripTrailingWhitespace() {
  if (tokens_.empty() || tokens_.back().type != Tok::kText) return;
  Token& t = tokens_.back();
  t.value.resize(TrimEnd(t.value).size());
  if (t.value.empty()) tokens_.pop_back();
}

// Text up to the next "{%", "{{" or "{#", when the previous token closed a tag.
bool Lexer::LexText() {
  if (!(NoTokens() || Last() == Tok::kCloseStmt || Last() == Tok::kCloseExpr ||
        Last() == Tok::kComment)) {
    return false;
  }
  size_t end = pos_;
  while (true) {
    end = src_.find('{', end);
    if (end == std::string::npos) {
      end = src_.size();
      break;
    }
    const int next = At(end + 1);
    if (next == '%' || next == '{' || next == '#') break;
    ++end;
  }
  if (end <= pos_) return false;
  Push(Tok::kText, src_.substr(pos_, end - pos_), pos_);
  pos_ = end;
  return true;
}

// Comments, and "{%-" / "{{-" (which strip the whitespace before them).
bool Lexer::LexTagOpen() {
  if (At(pos_) != '{') return false;
  const int next = At(pos_ + 1);
  if (next == '#') {
    const size_t start = pos_;
    pos_ += 2;
    const bool strip_before = At(pos_) == '-';
    if (strip_before) ++pos_;
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) Error(start, "missing end of comment tag '#}'");
    std::string comment = src_.substr(pos_, end - pos_);
    const bool strip_after = !comment.empty() && comment.back() == '-';
    if (strip_after) comment.pop_back();
    if (strip_before) StripTrailingWhitespace();
    Push(Tok::kComment, std::move(comment), start);
    pos_ = end + 2;
    if (strip_after) pos_ = SkipSpaces(pos_);
    return true;
  }
  if (At(pos_ + 2) != '-' || (next != '%' && next != '{')) return false;
  StripTrailingWhitespace();
  Push(next == '%' ? Tok::kOpenStmt : Tok::kOpenExpr, next == '%' ? "{%" : "{{", pos_);
  if (next == '{') curly_ = 0;
  pos_ += 3;
  return true;
}

// "-%}" and "-}}": close a tag and strip the whitespace after it.
bool Lexer::LexCloseWithStrip() {
  if (At(pos_) != '-' || At(pos_ + 2) != '}') return false;
  const int next = At(pos_ + 1);
  if (next != '%' && next != '}') return false;
  Push(next == '%' ? Tok::kCloseStmt : Tok::kCloseExpr, next == '%' ? "%}" : "}}", pos_);
  pos_ = SkipSpaces(pos_ + 3);
  return true;
}

// A "-" or "+" that does not follow an operand: a signed number, or a unary operator.
bool Lexer::LexSigned() {
  const int c = At(pos_);
  if (c != '-' && c != '+') return false;
  const Tok last = Last();
  if (NoTokens() || last == Tok::kText)
    Error(pos_, std::string("unexpected character '") + static_cast<char>(c) + "'");
  if (last == Tok::kIdent || last == Tok::kNumber || last == Tok::kString || last == Tok::kRParen ||
      last == Tok::kRBracket) {
    return false;  // a binary operator
  }
  const size_t start = pos_++;
  std::string num = ConsumeDigits();
  if (!num.empty() && At(pos_) == '.' && IsAsciiDigit(At(pos_ + 1))) {
    ++pos_;
    num += "." + ConsumeDigits();
  }
  if (num.empty()) {
    Push(Tok::kUnary, std::string(1, static_cast<char>(c)), start);
  } else {
    Push(Tok::kNumber, static_cast<char>(c) + num, start);
  }
  return true;
}

bool Lexer::LexRule() {
  for (const Rule& r : kRules) {
    const std::string_view seq(r.seq);
    if (seq == "}}" && curly_ > 0) continue;
    if (src_.compare(pos_, seq.size(), seq) != 0) continue;
    Push(r.type, std::string(seq), pos_);
    if (r.type == Tok::kOpenExpr) curly_ = 0;
    if (r.type == Tok::kLBrace) ++curly_;
    if (r.type == Tok::kRBrace) --curly_;
    pos_ += seq.size();
    return true;
  }
  return false;
}

// The character a one-letter escape stands for; 0 when the escape is unknown.
char SimpleEscape(int e) {
  switch (e) {
    case 'n':
      return '\n';
    case 't':
      return '\t';
    case 'r':
      return '\r';
    case 'b':
      return '\b';
    case 'f':
      return '\f';
    case 'v':
      return '\v';
    case '\'':
    case '"':
    case '\\':
      return static_cast<char>(e);
    default:
      return 0;
  }
}

// The value of the `len` hex digits at pos_ (after \x or \u), consumed.
uint32_t Lexer::LexHexEscape(size_t len) {
  uint32_t v = 0;
  for (size_t k = 0; k < len; ++k) {
    const int d = HexDigit(At(pos_ + k));
    if (d < 0) Error(pos_ - 2, "invalid hexadecimal escape sequence in string literal");
    v = v * 16 + static_cast<uint32_t>(d);
  }
  pos_ += len;
  return v;
}

// A quoted string. \u escapes are UTF-16 code units: a high and a low surrogate in a row
// make one character; a lone surrogate becomes U+FFFD.
void Lexer::LexString(int quote) {
  const size_t start = pos_++;
  std::string out;
  uint32_t high = 0;  // a \u high surrogate waiting for its low half
  auto flush_high = [&] {
    if (high != 0) AppendUtf8(out, 0xFFFD);
    high = 0;
  };
  while (true) {
    if (pos_ >= src_.size()) Error(start, "unterminated string literal");
    const int c = At(pos_++);
    if (c == quote) break;
    if (c != '\\') {
      flush_high();
      out += static_cast<char>(c);
      continue;
    }
    if (pos_ >= src_.size()) Error(start, "unterminated string literal");
    const int e = At(pos_++);
    if (e != 'x' && e != 'u') {
      flush_high();
      const char ch = SimpleEscape(e);
      if (ch == 0)
        Error(pos_ - 2, std::string("unexpected escaped character '") + static_cast<char>(e) + "'");
      out += ch;
      continue;
    }
    const uint32_t v = LexHexEscape(e == 'x' ? 2 : 4);
    if (v >= 0xDC00 && v <= 0xDFFF && high != 0) {
      AppendUtf8(out, 0x10000 + ((high - 0xD800) << 10) + (v - 0xDC00));
      high = 0;
      continue;
    }
    flush_high();
    if (v >= 0xD800 && v <= 0xDBFF) {
      high = v;
    } else {
      AppendUtf8(out, (v >= 0xDC00 && v <= 0xDFFF) ? 0xFFFD : v);
    }
  }
  flush_high();
  Push(Tok::kString, std::move(out), start);
}

void Lexer::LexNumber() {
  const size_t start = pos_;
  std::string num = ConsumeDigits();
  if (Last() != Tok::kDot && At(pos_) == '.' && IsAsciiDigit(At(pos_ + 1))) {
    ++pos_;
    num += "." + ConsumeDigits();
  }
  Push(Tok::kNumber, std::move(num), start);
}

std::vector<Token> Lexer::Run() {
  while (pos_ < src_.size()) {
    if (LexText() || LexTagOpen()) continue;
    ConsumeSpaces();
    if (LexCloseWithStrip() || LexSigned() || LexRule()) continue;
    const int c = At(pos_);
    if (c == '\'' || c == '"') {
      LexString(c);
    } else if (IsAsciiDigit(c)) {
      LexNumber();
    } else if (IsWord(c)) {
      const size_t start = pos_;
      while (IsWord(At(pos_))) {
        if (++pos_ >= src_.size()) Error(pos_, "unexpected end of template");
      }
      Push(Tok::kIdent, src_.substr(start, pos_ - start), start);
    } else {
      uint32_t cp = 0;
      const size_t n = DecodeUtf8(src_, pos_, &cp);
      Error(pos_, "unexpected character '" + src_.substr(pos_, n) + "'");
    }
  }
  return std::move(tokens_);
}

}  // namespace

Lexed Tokenize(std::string_view source) {
  const MappedText text = Preprocess(source);
  const SourceIndex index(source);
  Lexer lexer(text, index);
  Lexed out;
  out.tokens = lexer.Run();
  out.end = index.At(source.size());
  return out;
}

}  // namespace switchyard::chat_template::internal
