// Errors: parse and render errors are InvalidArgument naming the template, the line and the
// column, and what is wrong; raise_exception messages pass through; the limits stop
// templates that would recurse, loop or grow without bound.
#include <gtest/gtest.h>

#include "chat_template/template.h"
#include "tests/chat_template/render_helpers.h"

namespace switchyard::chat_template {
namespace {

using testing::Error;
using testing::LimitError;

TEST(Errors, ParseErrorsNameTheLine) {
  EXPECT_EQ(Error("line one\n{% if x %}\nno end"),
            "chat_template line 3, column 7: unexpected end of template: missing {% endif %}");
  EXPECT_EQ(Error("a\n\n  {{ 1 + }}"), "chat_template line 3, column 10: unexpected '}}'");
  EXPECT_EQ(Error("{% include 'x' %}"),
            "chat_template line 1, column 1: unknown statement 'include'");
  EXPECT_EQ(Error("{{ 'unterminated }}"),
            "chat_template line 1, column 4: unterminated string literal");
  EXPECT_EQ(Error("{# no end"), "chat_template line 1, column 1: missing end of comment tag '#}'");
  EXPECT_EQ(Error("x\n{{ a ! b }}"), "chat_template line 2, column 6: unexpected character '!'");
  EXPECT_EQ(Error("{% for x %}{% endfor %}"),
            "chat_template line 1, column 10: expected 'in' after the loop variable, got '%}'");
  EXPECT_EQ(
      Error("{% macro m(a=1, b) %}{% endmacro %}"),
      "chat_template line 1, column 17: a parameter without default follows one with a default");
}

TEST(Errors, LinesCountInTheOriginalSource) {
  // trim_blocks removes newlines before tokenizing; lines are still those of the source.
  EXPECT_EQ(Error("{% if true %}\n{% if true %}\n{% endif %}\n{% endif %}\n{{ x|frobnicate }}"),
            "chat_template line 5, column 6: unknown filter 'frobnicate'");
}

TEST(Errors, RenderErrorsNameTheLine) {
  EXPECT_EQ(Error("ok\n{{ messages[0] }}"),
            "chat_template line 2, column 12: cannot index a undefined with a integer");
  EXPECT_EQ(
      Error("\n\n{{ undefined_fn() }}"),
      "chat_template line 3, column 4: cannot call 'undefined_fn', a undefined (not a function)");
  EXPECT_EQ(Error("{% for x in 'abc' %}{% endfor %}"),
            "chat_template line 1, column 13: cannot loop over a string");
  EXPECT_EQ(Error("{{ 'a' ~ none }}"), "chat_template line 1, column 8: cannot apply '~' to none");
  EXPECT_EQ(Error("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat_template line 1, column 24: cannot set an attribute of a integer (only of a "
            "namespace)");
}

TEST(Errors, RaiseExceptionPassesTheMessageThrough) {
  EXPECT_EQ(Error("{% if messages|length > 1 %}\n  {{ raise_exception('Roles must alternate!') "
                  "}}\n{% endif %}",
                  {{"messages", {1, 2}}}),
            "chat_template line 2, column 6: Roles must alternate!");
}

TEST(Errors, ContextMustBeAnObject) {
  auto t = Template::Parse("x");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->Render(Json::array()).status().IsInvalidArgument());
  EXPECT_TRUE(t->Render(nullptr).ok());
  // A context key may not replace a builtin name (the reference refuses it too).
  EXPECT_EQ(t->Render({{"range", 1}}).status().message(),
            "chat_template: context variable 'range' is a builtin name");
}

TEST(Limits, MacroRecursion) {
  Limits limits;
  limits.max_call_depth = 10;
  EXPECT_EQ(LimitError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}\n{{ f(0) }}", limits),
            "chat_template line 1, column 20: macro calls nest deeper than 10 levels");
}

TEST(Limits, OutputSize) {
  Limits limits;
  limits.max_output_bytes = 1000;
  EXPECT_NE(LimitError("{% for i in range(100) %}0123456789abcdef{% endfor %}", limits)
                .find("the output exceeds the limit of 1000 bytes"),
            std::string::npos);
  // Doubling a string runs into the same limit, however it is built.
  EXPECT_NE(LimitError("{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
                       "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                       limits)
                .find("exceeds the limit of 1000 bytes"),
            std::string::npos);
  // A namespace that contains itself cannot be written out forever.
  EXPECT_NE(
      LimitError("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}", limits).find("tojson"),
      std::string::npos);
}

TEST(Limits, Steps) {
  Limits limits;
  limits.max_steps = 10000;
  EXPECT_NE(
      LimitError("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}",
                 limits)
          .find("more than 10000 steps"),
      std::string::npos);
}

TEST(Limits, Nesting) {
  std::string deep(500, '(');
  deep = "{{ " + deep + "1" + std::string(500, ')') + " }}";
  EXPECT_NE(LimitError(deep, {}).find("nests deeper than 200 levels"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 300; ++i) blocks += "{% if true %}";
  EXPECT_NE(LimitError(blocks, {}).find("nests deeper"), std::string::npos);
  Limits small;
  small.max_template_bytes = 10;
  EXPECT_NE(LimitError("01234567890", small).find("more than the limit of 10"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::chat_template
