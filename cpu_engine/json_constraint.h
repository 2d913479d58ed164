// JsonObjectConstraint: the language of a forced tool call's arguments, byte by byte — what
// the CPU engine's constrained decoding (cpu_step_runner.h) keeps a sequence's output
// inside, and what a front door uses to close an output that stopped short.
//
// The language, from a JSON schema of an object:
//   * one JSON object from its first byte (no leading whitespace), nothing after its '}';
//   * its keys are exactly the schema's "required" properties, each once, in the order
//     "required" lists them (written as nlohmann::json writes the key: `"name"`); a schema
//     that requires nothing allows only `{}`;
//   * each value matches its property's schema: "type" string (escapes included; the
//     string must decode to valid UTF-8, so a raw byte sequence may be split across tokens
//     but never be invalid, and \u escapes pair their surrogates), number, integer (no
//     fraction, no exponent), boolean, null, object (any JSON object), array (any JSON
//     array); "enum" (or "const"): exactly one of the values as nlohmann::json writes it;
//     no type, or a list of types: any JSON value;
//   * bounds a random model cannot spin on: at most 8 whitespace bytes in a row, 32
//     nested containers, 18 digits before and after a decimal point and 2 in an exponent
//     (so every number parses as a finite double), 64 values in an enum.
//
// Completion() closes whatever was fed into a complete object: it ends an open string or
// number, fills the remaining required keys with "" / 0 / false / null / {} / [] or the
// enum's first value (any type: null), and closes the brackets.
//
// Thread-safety: a value type; the compiled schema is immutable and shared by copies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "cpu_engine/internal/json_machine.h"
#include "cpu_engine/token_trie.h"

namespace switchyard::cpu_engine {

class JsonObjectConstraint {
 public:
  // InvalidArgument naming what is wrong when schema_json is not a JSON object schema
  // (not JSON, not an object, a "type" other than "object", malformed "properties",
  // "required", "type" or "enum", a required key listed twice, a property schema `false`).
  static Result<JsonObjectConstraint> FromSchema(std::string_view schema_json);

  // Feeds bytes; false (and the state unchanged) when they would leave the language.
  bool Feed(std::string_view bytes);
  bool CanFeed(std::string_view bytes) const;
  // The object has closed (nothing more may be fed).
  bool complete() const { return json_internal::Complete(state_); }
  // The shortest bytes that close the text fed so far into a complete object holding every
  // required key ("" once complete).
  std::string Completion() const;

  // allowed[t] = 1 for each token t of `trie` whose bytes can be fed now, else 0 (resized
  // to trie.vocab(); tokens without bytes are never allowed). One walk over the trie.
  void AllowedTokens(const TokenTrie& trie, std::vector<uint8_t>* allowed) const;

 private:
  explicit JsonObjectConstraint(std::shared_ptr<const json_internal::Schema> s)
      : schema_(std::move(s)) {}

  std::shared_ptr<const json_internal::Schema> schema_;
  json_internal::State state_;
};

}  // namespace switchyard::cpu_engine
