// The tokenizer of the Jinja subset (internal to chat_template).
//
// Tokenize() first applies the preprocessing of @huggingface/jinja with the Hugging Face
// defaults: one trailing newline of the template is dropped; lstrip_blocks removes spaces
// and tabs between a line start and "{%", "{#" or "{-"; trim_blocks removes the newline
// right after "%}", "#}" or "-}"; {% generation %} / {% endgeneration %} markers vanish.
// Then it splits the text into tokens with the reference's rules (whitespace control
// "{%-", "-%}", "{{-", "-}}", "{#- -#}"; a "-" or "+" after an operator starts a signed
// number or is unary). Every token keeps the line and column of the original source.
// Errors throw TemplateError. Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat_template/internal/error.h"

namespace switchyard::chat_template::internal {

enum class Tok {
  kText,
  kNumber,
  kString,
  kIdent,
  kEquals,
  kLParen,
  kRParen,
  kOpenStmt,
  kCloseStmt,
  kOpenExpr,
  kCloseExpr,
  kLBracket,
  kRBracket,
  kLBrace,
  kRBrace,
  kComma,
  kDot,
  kColon,
  kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kCompare,         // < > <= >= == !=
  kUnary,           // + - with no number after them
  kComment,
};

const char* TokName(Tok t);

struct Token {
  Tok type;
  std::string value;
  Pos pos;
};

struct Lexed {
  std::vector<Token> tokens;
  Pos end;  // the end of the source, for "unexpected end" errors
};

Lexed Tokenize(std::string_view source);

}  // namespace switchyard::chat_template::internal
