// The byte-level automaton behind JsonObjectConstraint (json_constraint.h): a compiled
// schema (the required properties and the literal texts they match) and a small,
// trivially copyable state that one byte at a time either advances or refuses. Copying a
// State is a memcpy, which is what lets the vocabulary walk (TokenTrie) keep one state per
// trie depth.
//
// Thread-safety: a Schema is immutable once built and shared; a State belongs to its user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace switchyard::cpu_engine::json_internal {

// What a required property's value may be. Object and array values are any JSON object /
// array; kAny is any JSON value (no type, or a list of types).
enum class Kind : uint8_t {
  kAny,
  kString,
  kNumber,
  kInteger,
  kBoolean,
  kNull,
  kEnum,
  kObject,
  kArray
};

struct Property {
  Kind kind = Kind::kAny;
  uint32_t key_text = 0;  // Schema::texts index: the key as JSON text, quotes included
  // kEnum: the values' JSON texts are texts[enum_first, enum_first + enum_count).
  uint32_t enum_first = 0, enum_count = 0;
};

// Literal texts: kTrue, kFalse, kNull first, then keys and enum values.
constexpr uint32_t kTrueText = 0, kFalseText = 1, kNullText = 2;

struct Schema {
  std::vector<Property> props;  // the required properties, in the schema's order
  std::vector<std::string> texts;
};

// Bounds that keep a random walk from spinning on one construct and keep every number
// finite when parsed as a double.
constexpr int kMaxDepth = 32;          // containers nested inside the top-level object
constexpr int kMaxWhitespace = 8;      // whitespace bytes in a row
constexpr int kMaxDigits = 18;         // digits before the point, and after it
constexpr int kMaxExponentDigits = 2;  // digits of an exponent
constexpr int kMaxEnumValues = 64;     // values of one enum

struct State {
  uint8_t phase = 0;    // where in the structure (json_machine.cc: Phase)
  uint8_t lex = 0;      // the scalar being read, if any (Lex)
  uint8_t depth = 0;    // nested containers open inside the top-level object
  uint8_t ws = 0;       // whitespace bytes in a row
  uint32_t arrays = 0;  // bit d-1: the container at depth d is an array (else an object)
  uint32_t prop = 0;    // the top-level property whose key or value comes now
  // String: sub-state, pending UTF-8 continuation bytes and the range of the next one,
  // \u escape digits read and their value, whether they must be a low surrogate.
  uint8_t str = 0, utf8_need = 0, utf8_lo = 0, utf8_hi = 0;
  uint8_t hex_n = 0;
  bool low = false;
  uint16_t hex = 0;
  // Number: sub-state, digits in the current part, whether only an integer may follow.
  uint8_t num = 0, digits = 0;
  bool integer = false;
  // Literal text (key, true, false, null) or enum: which text, bytes matched, candidates.
  uint32_t text = 0, off = 0;
  uint64_t cands = 0;
};

// Feeds one byte. Returns false when the byte leaves the language; `st` is then garbage
// (callers step a copy).
bool Step(const Schema& s, State* st, uint8_t byte);
// Whether the top-level object has closed.
bool Complete(const State& st);
// The next byte of the shortest completion (-1: complete).
int NextCompletionByte(const Schema& s, const State& st);

}  // namespace switchyard::cpu_engine::json_internal
