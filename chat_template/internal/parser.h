// The parser of the Jinja subset (internal to chat_template).
//
// Parse() turns the tokens of lexer.h into a tree of ast.h, following the grammar and the
// operator precedence of @huggingface/jinja (lowest first): "a if b else c", or, and, not,
// comparisons and in/not in (left to right, not chained), + - ~, * / // %, **, is-tests,
// filters, unary - and +, then calls, attributes, subscripts and slices. Statements: if /
// elif / else, for (with "if" filter, else, break, continue), set (also ns.attr and block
// set), macro, call blocks, filter blocks; unknown statements are errors. max_depth bounds
// the nesting of blocks and expressions (so that no input can exhaust the stack). Errors
// throw TemplateError. Pure; thread-safe.
#pragma once

#include <vector>

#include "chat_template/internal/ast.h"
#include "chat_template/internal/lexer.h"

namespace switchyard::chat_template::internal {

// The statements of the template, in order.
std::vector<NodePtr> Parse(const Lexed& lexed, int max_depth);

}  // namespace switchyard::chat_template::internal
