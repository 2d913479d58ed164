// The error of a template that cannot be parsed or rendered (internal to chat_template).
//
// Inside the module, the lexer, parser and interpreter report a problem by throwing a
// TemplateError that names where it is (line and column of the template source) and what
// is wrong; Template::Parse and Template::Render catch it (and anything else) and return
// Status::InvalidArgument, so no exception leaves the module. Throwing keeps the
// recursive evaluator as small as the grammar it follows.
#pragma once

#include <cstdint>
#include <string>

namespace switchyard::chat_template::internal {

// A place in the template source: 1-based line and column (in code points); 0 = unknown.
struct Pos {
  uint32_t line = 0;
  uint32_t column = 0;
};

struct TemplateError {
  Pos pos;
  std::string message;
  bool from_raise = false;  // raised by the template itself (raise_exception)
};

[[noreturn]] inline void Fail(Pos pos, std::string message) {
  throw TemplateError{pos, std::move(message)};
}

// A string result would pass the render's output limit.
[[noreturn]] inline void FailStringTooLong() { Fail({}, "a string exceeds the output limit"); }

}  // namespace switchyard::chat_template::internal
