// Statements of the Jinja subset: text and whitespace control, if, for, set, macro, call
// and filter blocks, as @huggingface/jinja renders them.
#include <gtest/gtest.h>

#include "tests/chat_template/render_helpers.h"

namespace switchyard::chat_template {
namespace {

using testing::Render;

TEST(Statements, TextAndOutput) {
  EXPECT_EQ(Render("Hello {{ name }}!", {{"name", "world"}}), "Hello world!");
  EXPECT_EQ(Render("a{# a comment #}b"), "ab");
  EXPECT_EQ(Render("{{ '{{' }} and {{ \"}}\" }}"), "{{ and }}");
  // One trailing newline of the template is dropped, as the reference does.
  EXPECT_EQ(Render("x\n"), "x");
  EXPECT_EQ(Render("x\n\n"), "x\n");
}

TEST(Statements, WhitespaceControl) {
  EXPECT_EQ(Render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(Render("a \n {%- if true -%} \n b {%- endif %}"), "ab");
  EXPECT_EQ(Render("a {#- c -#} b"), "ab");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before one.
  EXPECT_EQ(Render("{% if true %}\n  x\n{% endif %}\ny"), "  x\ny");
  EXPECT_EQ(Render("<\n    {% if true %}\n    in\n    {% endif %}\n>"), "<\n    in\n>");
  // Not after expressions: {{ }} keeps its newline.
  EXPECT_EQ(Render("{{ 1 }}\n{{ 2 }}"), "1\n2");
  // lstrip_blocks does not apply to {{, but does to a "{-" at a line start.
  EXPECT_EQ(Render("  {{ 1 }}"), "  1");
}

TEST(Statements, IfElifElse) {
  const char* t = "{% if x > 2 %}big{% elif x > 1 %}mid{% else %}small{% endif %}";
  EXPECT_EQ(Render(t, {{"x", 3}}), "big");
  EXPECT_EQ(Render(t, {{"x", 2}}), "mid");
  EXPECT_EQ(Render(t, {{"x", 1}}), "small");
  EXPECT_EQ(Render("{% if [] %}a{% elif {} %}b{% elif '' %}c{% else %}d{% endif %}"), "d");
  EXPECT_EQ(Render("{% if undefined_thing %}a{% else %}b{% endif %}"), "b");
}

TEST(Statements, ForLoopVariables) {
  const char* t =
      "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
      "{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}";
  EXPECT_EQ(Render(t, {{"xs", {"a", "b"}}}), "1021truefalse2|2110falsetrue2|");
  EXPECT_EQ(Render("{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }};{% endfor %}",
                   {{"xs", {1, 2, 3}}}),
            "<1>2;1<2>3;2<3>;");
}

TEST(Statements, ForElseFilterAndUnpacking) {
  EXPECT_EQ(Render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(Render("{% for x in xs if x is odd %}{{ x }}{{ loop.length }} {% endfor %}",
                   {{"xs", {1, 2, 3, 4, 5}}}),
            "13 33 53 ");
  EXPECT_EQ(Render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(Render("{% for k in d %}{{ k }}{% endfor %}", {{"d", {{"x", 1}, {"y", 2}}}}), "xy");
  EXPECT_EQ(Render("{% for m in messages[::-1] %}{{ m }}{% endfor %}", {{"messages", {1, 2, 3}}}),
            "321");
}

TEST(Statements, BreakAndContinueDropTheIterationsOutput) {
  EXPECT_EQ(Render("{% for x in [1,2,3,4] %}{{ x }}{% if x == 2 %}{% continue %}{% endif %}"
                   "{% if x == 3 %}{% break %}{% endif %}.{% endfor %}"),
            "1.");
  // Every iteration continued: the else block runs, as in the reference.
  EXPECT_EQ(Render("{% for x in [1,2] %}{% continue %}{% else %}none{% endfor %}"), "none");
}

TEST(Statements, LoopScope) {
  // A set inside a loop does not change the outer variable; namespace() is the way out.
  EXPECT_EQ(Render("{% set n = 0 %}{% for x in [1,2] %}{% set n = n + x %}{% endfor %}{{ n }}"),
            "0");
  EXPECT_EQ(Render("{% set ns = namespace(n=0) %}{% for x in [1,2] %}{% set ns.n = ns.n + x %}"
                   "{% endfor %}{{ ns.n }}"),
            "3");
  // An if block does not open a scope.
  EXPECT_EQ(Render("{% if true %}{% set a = 1 %}{% endif %}{{ a }}"), "1");
}

TEST(Statements, Set) {
  EXPECT_EQ(Render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(Render("{% set a, b = [3, 4] %}{{ a }}{{ b }}"), "34");
  EXPECT_EQ(Render("{% set t %}block {{ 1 + 1 }}{% endset %}[{{ t }}]"), "[block 2]");
  EXPECT_EQ(Render("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns.c }}"), "12");
}

TEST(Statements, Macros) {
  EXPECT_EQ(Render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('a') }} {{ greet('b', '?') }} {{ greet(punct='.', name='c') }}"),
            "Hi a! Hi b? Hi c.");
  // A default may read an earlier parameter; macros see the scope they were defined in.
  EXPECT_EQ(Render("{% set g = 'G' %}{% macro m(a, b=a * 2) %}{{ a }}{{ b }}{{ g }}{% endmacro %}"
                   "{{ m(3) }}"),
            "36G");
  EXPECT_EQ(Render("{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, x=3) }}"),
            "[1, 2]{\"x\": 3}");
  // Recursion.
  EXPECT_EQ(Render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}"
                   "{{ f(3) }}"),
            "321");
}

TEST(Statements, CallAndFilterBlocks) {
  EXPECT_EQ(
      Render("{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}in{% endcall %}"),
      "[in]");
  EXPECT_EQ(Render("{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% endmacro %}"
                   "{% call(v) each([1, 2]) %}<{{ v }}>{% endcall %}"),
            "<1><2>");
  EXPECT_EQ(Render("{% filter upper %}abc {{ 'd' }}{% endfilter %}"), "ABC D");
  EXPECT_EQ(Render("{% filter replace('a', 'b') %}aaa{% endfilter %}"), "bbb");
}

TEST(Statements, GenerationMarkersVanish) {
  EXPECT_EQ(Render("a{% generation %}b{% endgeneration %}c"), "abc");
  EXPECT_EQ(Render("a  {%- generation -%}  b"), "ab");
}

}  // namespace
}  // namespace switchyard::chat_template
