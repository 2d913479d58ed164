// The byte automaton of JsonObjectConstraint (internal/json_machine.h).
//
// Structure: `phase` says what the innermost open container (or the top-level object,
// depth 0) expects next; a scalar being read (string, number, literal text, enum) is
// `lex`, on top of the phase that was current when it started, so that its end knows
// whether it was a key (then a colon follows) or a value. Numbers and enums end lazily: a
// byte they cannot take ends them and is then read by the structure.
#include "cpu_engine/internal/json_machine.h"

namespace switchyard::cpu_engine::json_internal {
namespace {

enum Phase : uint8_t {
  kStart,     // before the top-level '{'
  kObjFirst,  // after '{': a key or '}'
  kObjKey,    // after ',': a key
  kObjColon,  // after a key: ':'
  kObjValue,  // after ':': a value
  kObjAfter,  // after a value: ',' or '}'
  kArrFirst,  // after '[': a value or ']'
  kArrValue,  // after ',': a value
  kArrAfter,  // after a value: ',' or ']'
  kDone,      // the top-level object closed
};
enum Lex : uint8_t { kNoLex, kStr, kNum, kText, kEnum };
enum Str : uint8_t { kSNormal, kSEscape, kSHex, kSLowBackslash, kSLowU };
enum Num : uint8_t { kNMinus, kNZero, kNInt, kNDot, kNFrac, kNE, kNESign, kNExp };
enum LexResult { kAccepted, kRefused, kEnded };

bool IsWs(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }
bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
int HexValue(uint8_t b) {
  if (IsDigit(b)) return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

bool InArray(const State& st) { return st.depth > 0 && ((st.arrays >> (st.depth - 1)) & 1u); }
uint8_t AfterPhase(const State& st) { return InArray(st) ? kArrAfter : kObjAfter; }

void EndScalar(State* st) {
  st->lex = kNoLex;
  st->phase = st->phase == kObjFirst || st->phase == kObjKey ? uint8_t{kObjColon} : AfterPhase(*st);
}

// ---- Scalars -----------------------------------------------------------------------------

// The first byte of a multi-byte UTF-8 sequence: how many continuation bytes follow and
// the range of the first (which excludes overlong forms, surrogates and > U+10FFFF).
bool StartUtf8(State* st, uint8_t b) {
  uint8_t need = 0, lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return false;
  }
  st->utf8_need = need, st->utf8_lo = lo, st->utf8_hi = hi;
  return true;
}

LexResult StepHex(State* st, uint8_t b) {
  const int h = HexValue(b);
  if (h < 0) return kRefused;
  if (st->low) {  // after a high surrogate: \uDC00-\uDFFF
    if ((st->hex_n == 0 && h != 0xD) || (st->hex_n == 1 && h < 0xC)) return kRefused;
  } else if (st->hex_n == 1 && st->hex == 0xD && h >= 0xC) {
    return kRefused;  // a low surrogate with no high one before it
  }
  st->hex = static_cast<uint16_t>(st->hex * 16 + h);
  if (++st->hex_n < 4) return kAccepted;
  const bool high = !st->low && st->hex >= 0xD800 && st->hex <= 0xDBFF;
  st->str = high ? kSLowBackslash : kSNormal;
  st->low = false;
  return kAccepted;
}

void StartHex(State* st, bool low) {
  st->str = kSHex;
  st->hex_n = 0;
  st->hex = 0;
  st->low = low;
}

LexResult StepString(State* st, uint8_t b) {
  switch (st->str) {
    case kSNormal:
      if (st->utf8_need > 0) {
        if (b < st->utf8_lo || b > st->utf8_hi) return kRefused;
        --st->utf8_need;
        st->utf8_lo = 0x80, st->utf8_hi = 0xBF;
        return kAccepted;
      }
      if (b == '"') {
        EndScalar(st);
        return kAccepted;
      }
      if (b == '\\') {
        st->str = kSEscape;
        return kAccepted;
      }
      if (b < 0x20) return kRefused;
      return b < 0x80 || StartUtf8(st, b) ? kAccepted : kRefused;
    case kSEscape:
      if (b == 'u') {
        StartHex(st, false);
        return kAccepted;
      }
      if (b != '"' && b != '\\' && b != '/' && b != 'b' && b != 'f' && b != 'n' && b != 'r' &&
          b != 't')
        return kRefused;
      st->str = kSNormal;
      return kAccepted;
    case kSHex:
      return StepHex(st, b);
    case kSLowBackslash:
      if (b != '\\') return kRefused;
      st->str = kSLowU;
      return kAccepted;
    default:  // kSLowU
      if (b != 'u') return kRefused;
      StartHex(st, true);
      return kAccepted;
  }
}

LexResult StepNumber(State* st, uint8_t b) {
  const bool digit = IsDigit(b);
  auto to = [&](Num n, uint8_t digits) {
    st->num = n;
    st->digits = digits;
    return kAccepted;
  };
  switch (st->num) {
    case kNMinus:
      if (b == '0') return to(kNZero, 0);
      return digit ? to(kNInt, 1) : kRefused;
    case kNZero:
    case kNInt:
    case kNFrac:
      if (digit && st->num != kNZero && st->digits < kMaxDigits)
        return to(Num(st->num), st->digits + 1);
      if (b == '.' && st->num != kNFrac && !st->integer) return to(kNDot, 0);
      if ((b == 'e' || b == 'E') && !st->integer) return to(kNE, 0);
      return kEnded;
    case kNDot:
      return digit ? to(kNFrac, 1) : kRefused;
    case kNE:
      if (b == '+' || b == '-') return to(kNESign, 0);
      return digit ? to(kNExp, 1) : kRefused;
    case kNESign:
      return digit ? to(kNExp, 1) : kRefused;
    default:  // kNExp
      if (digit && st->digits < kMaxExponentDigits) return to(kNExp, st->digits + 1);
      return kEnded;
  }
}

bool NumberMayEnd(const State& st) {
  return st.num == kNZero || st.num == kNInt || st.num == kNFrac || st.num == kNExp;
}

LexResult StepText(const Schema& s, State* st, uint8_t b) {
  const std::string& t = s.texts[st->text];
  if (st->off >= t.size() || static_cast<uint8_t>(t[st->off]) != b) return kRefused;
  if (++st->off == t.size()) EndScalar(st);
  return kAccepted;
}

// Candidates of an enum that extend with `b`; `whole`: a candidate ends before `b`.
uint64_t EnumNext(const Schema& s, const State& st, int b, bool* whole) {
  const Property& p = s.props[st.prop];
  uint64_t next = 0;
  *whole = false;
  for (uint32_t i = 0; i < p.enum_count; ++i) {
    if (!((st.cands >> i) & 1u)) continue;
    const std::string& t = s.texts[p.enum_first + i];
    if (st.off == t.size())
      *whole = true;
    else if (static_cast<uint8_t>(t[st.off]) == b)
      next |= uint64_t{1} << i;
  }
  return next;
}

LexResult StepEnum(const Schema& s, State* st, uint8_t b) {
  bool whole = false;
  const uint64_t next = EnumNext(s, *st, b, &whole);
  if (next == 0) return whole ? kEnded : kRefused;
  st->cands = next;
  ++st->off;
  return kAccepted;
}

LexResult StepLex(const Schema& s, State* st, uint8_t b) {
  switch (st->lex) {
    case kStr:
      return StepString(st, b);
    case kNum:
      return StepNumber(st, b);
    case kText:
      return StepText(s, st, b);
    default:
      return StepEnum(s, st, b);
  }
}

// ---- Structure ---------------------------------------------------------------------------

void StartString(State* st) {
  st->lex = kStr;
  st->str = kSNormal;
  st->utf8_need = 0;
}

bool StartText(const Schema& s, State* st, uint32_t text, uint8_t b) {
  st->lex = kText;
  st->text = text;
  st->off = 0;
  return StepText(s, st, b) == kAccepted;
}

bool Push(State* st, bool array) {
  if (st->depth >= kMaxDepth) return false;
  ++st->depth;
  const uint32_t bit = 1u << (st->depth - 1);
  st->arrays = array ? st->arrays | bit : st->arrays & ~bit;
  st->phase = array ? kArrFirst : kObjFirst;
  return true;
}

bool Close(State* st) {
  if (st->depth == 0) {
    st->phase = kDone;
  } else {
    --st->depth;
    st->phase = AfterPhase(*st);
  }
  return true;
}

bool StartAny(const Schema& s, State* st, uint8_t b) {
  switch (b) {
    case '"':
      StartString(st);
      return true;
    case 't':
      return StartText(s, st, kTrueText, b);
    case 'f':
      return StartText(s, st, kFalseText, b);
    case 'n':
      return StartText(s, st, kNullText, b);
    case '{':
      return Push(st, false);
    case '[':
      return Push(st, true);
    default:
      if (b != '-' && !IsDigit(b)) return false;
      st->lex = kNum;
      st->integer = false;
      st->num = kNMinus;
      return b == '-' || StepNumber(st, b) == kAccepted;
  }
}

bool StartValue(const Schema& s, State* st, uint8_t b) {
  const Kind kind = st->depth == 0 ? s.props[st->prop].kind : Kind::kAny;
  switch (kind) {
    case Kind::kAny:
      return StartAny(s, st, b);
    case Kind::kString:
      return b == '"' && StartAny(s, st, b);
    case Kind::kNumber:
    case Kind::kInteger:
      if ((b != '-' && !IsDigit(b)) || !StartAny(s, st, b)) return false;
      st->integer = kind == Kind::kInteger;
      return true;
    case Kind::kBoolean:
      return (b == 't' || b == 'f') && StartAny(s, st, b);
    case Kind::kNull:
      return b == 'n' && StartAny(s, st, b);
    case Kind::kEnum:
      st->lex = kEnum;
      st->off = 0;
      st->cands = s.props[st->prop].enum_count >= 64
                      ? ~uint64_t{0}
                      : (uint64_t{1} << s.props[st->prop].enum_count) - 1;
      return StepEnum(s, st, b) == kAccepted;
    case Kind::kObject:
      return b == '{' && Push(st, false);
    default:  // kArray
      return b == '[' && Push(st, true);
  }
}

bool StepKey(const Schema& s, State* st, uint8_t b) {
  if (b != '"') return false;
  if (st->depth > 0) {
    StartString(st);
    return true;
  }
  return st->prop < s.props.size() && StartText(s, st, s.props[st->prop].key_text, b);
}

bool StepObjAfter(const Schema& s, State* st, uint8_t b) {
  if (st->depth > 0) {
    if (b == '}') return Close(st);
    if (b != ',') return false;
    st->phase = kObjKey;
    return true;
  }
  if (st->prop + 1 < s.props.size()) {
    if (b != ',') return false;
    ++st->prop;
    st->phase = kObjKey;
    return true;
  }
  return b == '}' && Close(st);
}

bool StepStructure(const Schema& s, State* st, uint8_t b) {
  if (IsWs(b)) {
    // None before the object: the prompt ends where it opens (a random model would spend
    // its tokens there).
    if (st->phase == kStart || st->phase == kDone || st->ws >= kMaxWhitespace) return false;
    ++st->ws;
    return true;
  }
  st->ws = 0;
  switch (st->phase) {
    case kStart:
      if (b != '{') return false;
      st->phase = kObjFirst;
      st->prop = 0;
      return true;
    case kObjFirst:
      if (b == '}' && (st->depth > 0 || s.props.empty())) return Close(st);
      return StepKey(s, st, b);
    case kObjKey:
      return StepKey(s, st, b);
    case kObjColon:
      if (b != ':') return false;
      st->phase = kObjValue;
      return true;
    case kArrFirst:
      if (b == ']') return Close(st);
      return StartValue(s, st, b);
    case kObjValue:
    case kArrValue:
      return StartValue(s, st, b);
    case kObjAfter:
      return StepObjAfter(s, st, b);
    case kArrAfter:
      if (b == ']') return Close(st);
      if (b != ',') return false;
      st->phase = kArrValue;
      return true;
    default:  // kDone: nothing after the closing brace
      return false;
  }
}

// The byte that ends the current value where it stands: ',' or '}' at the top level,
// the open container's closing bracket inside one.
int CloseByte(const Schema& s, const State& st) {
  if (st.depth > 0) return InArray(st) ? ']' : '}';
  return st.prop + 1 < s.props.size() ? ',' : '}';
}

int DefaultValueByte(const Schema& s, const State& st) {
  if (st.depth > 0) return 'n';
  const Property& p = s.props[st.prop];
  switch (p.kind) {
    case Kind::kString:
      return '"';
    case Kind::kNumber:
    case Kind::kInteger:
      return '0';
    case Kind::kBoolean:
      return 'f';
    case Kind::kEnum:
      return static_cast<uint8_t>(s.texts[p.enum_first][0]);
    case Kind::kObject:
      return '{';
    case Kind::kArray:
      return '[';
    default:  // kAny, kNull
      return 'n';
  }
}

int NextStringByte(const State& st) {
  switch (st.str) {
    case kSNormal:
      return st.utf8_need > 0 ? st.utf8_lo : '"';
    case kSEscape:
      return 'n';
    case kSHex:
      if (st.low && st.hex_n < 2) return st.hex_n == 0 ? 'D' : 'C';
      return '0';
    case kSLowBackslash:
      return '\\';
    default:
      return 'u';
  }
}

}  // namespace

bool Step(const Schema& s, State* st, uint8_t b) {
  if (st->lex != kNoLex) {
    const LexResult r = StepLex(s, st, b);
    if (r != kEnded) return r == kAccepted;
    EndScalar(st);
  }
  return StepStructure(s, st, b);
}

bool Complete(const State& st) { return st.phase == kDone; }

int NextCompletionByte(const Schema& s, const State& st) {
  switch (st.lex) {
    case kStr:
      return NextStringByte(st);
    case kNum:
      return NumberMayEnd(st) ? CloseByte(s, st) : '0';
    case kText:
      return static_cast<uint8_t>(s.texts[st.text][st.off]);
    case kEnum: {
      bool whole = false;
      (void)EnumNext(s, st, -1, &whole);
      if (whole) return CloseByte(s, st);
      const Property& p = s.props[st.prop];
      for (uint32_t i = 0; i < p.enum_count; ++i)
        if ((st.cands >> i) & 1u) return static_cast<uint8_t>(s.texts[p.enum_first + i][st.off]);
      return -1;
    }
    default:
      break;
  }
  switch (st.phase) {
    case kStart:
      return '{';
    case kObjFirst:
      return st.depth > 0 || s.props.empty() ? '}' : '"';
    case kObjKey:
      return '"';
    case kObjColon:
      return ':';
    case kObjValue:
    case kArrValue:
      return DefaultValueByte(s, st);
    case kArrFirst:
      return ']';
    case kObjAfter:
    case kArrAfter:
      return CloseByte(s, st);
    default:
      return -1;
  }
}

}  // namespace switchyard::cpu_engine::json_internal
