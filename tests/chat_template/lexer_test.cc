// Preprocessing and tokenizing (chat_template/internal/preprocess.h, lexer.h).
#include "chat_template/internal/lexer.h"

#include <gtest/gtest.h>

#include "chat_template/internal/preprocess.h"

namespace switchyard::chat_template::internal {
namespace {

std::string Kinds(std::string_view source) {
  std::string out;
  for (const Token& t : Tokenize(source).tokens) out += std::string(TokName(t.type)) + " ";
  return out;
}

TEST(Preprocess, HuggingFaceDefaults) {
  EXPECT_EQ(Preprocess("a\n").text, "a");
  EXPECT_EQ(Preprocess("  {% x %}\nb\n  {{ y }}").text, "{% x %}b\n  {{ y }}");
  EXPECT_EQ(Preprocess("\t{#c#}\n").text, "{#c#}");
  EXPECT_EQ(Preprocess("x -}\ny").text, "x -}y");  // trim_blocks is textual, as the reference's
  EXPECT_EQ(Preprocess("a {%- generation -%}  b{% endgeneration %}").text, "ab");
  // Every output byte knows its source offset.
  const MappedText m = Preprocess("  {% x %}\nb");
  EXPECT_EQ(m.origin.front(), 2u);
  EXPECT_EQ(m.origin.back(), 10u);
}

TEST(Lexer, Tokens) {
  EXPECT_EQ(Kinds("a{{ x.y[0] | f(1, k='v') }}b"),
            "text '{{' name '.' name '[' number ']' '|' name '(' number ',' name '=' string ')' "
            "'}}' text ");
  // A sign after an operator is part of a number; after an operand it is an operator.
  EXPECT_EQ(Kinds("{{ -1 - -x }}"), "'{{' number operator unary operator name '}}' ");
  EXPECT_EQ(Kinds("{{ {'a': {'b': 1}} }}"),
            "'{{' '{' string ':' '{' string ':' number '}' '}' '}}' ");
}

TEST(Lexer, WhitespaceControlAndPositions) {
  const Lexed l = Tokenize("a  \n{%- if x -%}  \n b");
  ASSERT_EQ(l.tokens.size(), 6u);
  EXPECT_EQ(l.tokens[0].value, "a");
  EXPECT_EQ(l.tokens[5].value, "b");
  EXPECT_EQ(l.tokens[2].pos.line, 2u);
  EXPECT_EQ(l.tokens[2].pos.column, 5u);
  EXPECT_EQ(l.tokens[5].pos.line, 3u);
}

TEST(Lexer, StringEscapes) {
  const Lexed l = Tokenize("{{ '\\u00e9\\ud83d\\ude00\\x41\\\\' }}");
  EXPECT_EQ(l.tokens[1].value,
            "\xC3\xA9\xF0\x9F\x98\x80"
            "A\\");
}

TEST(Lexer, Errors) {
  EXPECT_THROW(Tokenize("{{ 'a"), TemplateError);
  EXPECT_THROW(Tokenize("{{ '\\q' }}"), TemplateError);
  EXPECT_THROW(Tokenize("{{ x "), TemplateError);
  EXPECT_THROW(Tokenize("{{ \xC3\xA9 }}"), TemplateError);
}

}  // namespace
}  // namespace switchyard::chat_template::internal
