// Expressions of the Jinja subset: literals, operators (with the reference's JavaScript
// semantics), tests, attributes, subscripts, slices, calls, string and dict methods, and
// the global functions.
#include <gtest/gtest.h>

#include "base/clock.h"
#include "tests/chat_template/render_helpers.h"

namespace switchyard::chat_template {
namespace {

using testing::Render;
using testing::RenderExt;

TEST(Expressions, Literals) {
  EXPECT_EQ(Render("{{ 'a\\n\\t\\'' }}|{{ \"\\u00e9\\x41\" }}|{{ 'a' 'b' }}"),
            "a\n\t'|\xC3\xA9"
            "A|ab");
  EXPECT_EQ(Render("{{ 42 }} {{ -7 }} {{ 1.5 }} {{ 2.0 }} {{ -0.0 }} {{ 007 }}"),
            "42 -7 1.5 2.0 -0.0 7");
  EXPECT_EQ(Render("{{ true }} {{ True }} {{ none }} {{ None }}|"), "true true  |");
  EXPECT_EQ(Render("{{ [1, 'a', [true, none]] }} {{ {'k': 1, 'j': {'x': 2.5}} }}"),
            "[1, \"a\", [true, null]] {\"k\": 1, \"j\": {\"x\": 2.5}}");
  EXPECT_EQ(Render("{{ {'a': {'b': 1}} }}"), "{\"a\": {\"b\": 1}}");
}

TEST(Expressions, Arithmetic) {
  EXPECT_EQ(Render("{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 7 // 2 }}"),
            "3 -3 12 3.5 2.0 3");
  EXPECT_EQ(
      Render("{{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 * 2 }}"),
      "-4 1 -1 1024 0.5 3.0");
  EXPECT_EQ(Render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 0.1 + 0.2 }} {{ 10 ** 21 }} {{ 1 / 3 }}"),
            "7 9 0.30000000000000004 1e+21 0.3333333333333333");
  EXPECT_EQ(Render("{{ 'a' + 'b' }} {{ 'a' ~ 1 ~ 2.0 }} {{ 'n' + 1 }} {{ [1] + [2] }}"),
            "ab a12 n1 [1, 2]");
  EXPECT_EQ(Render("{{ x ~ 'y' }}|{{ 'y' ~ x }}"), "y|y");  // undefined is '' with ~
}

TEST(Expressions, ComparisonAndLogic) {
  EXPECT_EQ(Render("{{ 1 < 2 }} {{ 2 <= 1 }} {{ 1 == 1.0 }} {{ 'a' == 'a' }} {{ 'a' != 'b' }}"),
            "true false true true true");
  // == is JavaScript's loose equality on the values.
  EXPECT_EQ(Render("{{ 1 == '1' }} {{ true == 1 }} {{ none == undefined_var }} {{ [1] == [1] }}"),
            "true true true false");
  EXPECT_EQ(Render("{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ [] or none }}| {{ not [] }} {{ not 1 }}"),
            "x b | true false");
  EXPECT_EQ(Render("{{ 'b' in 'abc' }} {{ 'k' in {'k': 1} }} {{ 2 in [1, 2] }} {{ 3 not in [1] }}"),
            "true true true true");
  EXPECT_EQ(Render("{{ 'x' in undefined_var }} {{ 'x' not in undefined_var }}"), "false true");
  EXPECT_EQ(Render("{{ 'a' if x else 'b' }} {{ 'a' if not x else 'b' }}|{{ 'c' if x }}|"), "b a||");
}

TEST(Expressions, Tests) {
  const Json ctx = {{"s", "Ab"}, {"n", 3},          {"f", 2.5},
                    {"l", {1}},  {"d", {{"a", 1}}}, {"z", nullptr}};
  EXPECT_EQ(Render("{{ s is string }}{{ n is number }}{{ n is integer }}{{ f is integer }}"
                   "{{ l is iterable }}{{ s is iterable }}{{ d is mapping }}{{ l is sequence }}",
                   ctx),
            "truetruetruefalsetruetruetruetrue");
  EXPECT_EQ(Render("{{ z is none }}{{ z is defined }}{{ q is defined }}{{ q is undefined }}"
                   "{{ n is odd }}{{ n is even }}{{ true is boolean }}{{ false is false }}",
                   ctx),
            "truetruefalsetruetruefalsetruetrue");
  EXPECT_EQ(
      Render("{{ z is not none }}{{ 'ab' is lower }}{{ s is upper }}{{ range is callable }}", ctx),
      "falsetruefalsetrue");
  // Extensions: tests with an argument.
  EXPECT_EQ(
      RenderExt("{{ 3 is eq 3 }}{{ 3 is equalto(4) }}{{ 6 is divisibleby 3 }}{{ 2 is gt 1 }}"),
      "truefalsetruetrue");
}

TEST(Expressions, AttributesSubscriptsSlices) {
  const Json ctx = {
      {"m", {{"role", "user"}, {"items", 7}}}, {"l", {10, 20, 30, 40}}, {"s", "héllo"}};
  EXPECT_EQ(Render("{{ m.role }} {{ m['role'] }} {{ m.missing }}|{{ m.missing.deeper }}|", ctx),
            "user user ||");
  EXPECT_EQ(
      Render("{{ m.items }} {{ l[0] }} {{ l[-1] }} {{ l[9] }}|{{ l.length }} {{ s.length }}", ctx),
      "7 10 40 |4 5");
  EXPECT_EQ(
      Render("{{ l[1:3] }} {{ l[:2] }} {{ l[2:] }} {{ l[::-1] }} {{ l[::2] }} {{ l[-2:] }}", ctx),
      "[20, 30] [10, 20] [30, 40] [40, 30, 20, 10] [10, 30] [30, 40]");
  EXPECT_EQ(Render("{{ s[1] }} {{ s[1:3] }} {{ s[::-1] }}", ctx), "é él olléh");
}

TEST(Expressions, StringMethods) {
  EXPECT_EQ(Render("{{ ' ab '.strip() }}|{{ ' ab '.lstrip() }}|{{ ' ab '.rstrip() }}|"),
            "ab|ab | ab|");
  // As in the reference, strip/lstrip/rstrip ignore their argument and strip whitespace.
  EXPECT_EQ(Render("{{ '\\nxx\\n '.rstrip('\\n') }}|{{ 'xax'.strip('x') }}"), "\nxx|xax");
  EXPECT_EQ(Render("{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'c')) }}"), "true true");
  EXPECT_EQ(Render("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}"),
            "[\"a\", \"b\", \"\", \"c\"] [\"a\", \"b\"] [\"a\", \"b,c\"]");
  EXPECT_EQ(Render("{{ 'aXbX'.replace('X', '-') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ "
                   "'ab'.replace('', '.') }}"),
            "a-b- bba .a.b.");
  EXPECT_EQ(Render("{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }} {{ 'Ab'.upper() }}{{ "
                   "'Ab'.lower() }}"),
            "Hello World HELLO ABab");
  // Extension: sep.join(list).
  EXPECT_EQ(RenderExt("{{ ', '.join(['a', 'b']) }}"), "a, b");
}

TEST(Expressions, DictMethods) {
  const Json ctx = {{"d", {{"b", 1}, {"a", 2}}}};
  EXPECT_EQ(Render("{{ d.keys() }} {{ d.values() }} {{ d.items() }}", ctx),
            "[\"b\", \"a\"] [1, 2] [[\"b\", 1], [\"a\", 2]]");
  EXPECT_EQ(Render("{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 5) }}", ctx), "2  5");
  EXPECT_EQ(Render("{{ d.dictsort() }} {{ d|dictsort(by='value', reverse=true) }}", ctx),
            "[[\"a\", 2], [\"b\", 1]] [[\"a\", 2], [\"b\", 1]]");
}

TEST(Expressions, Globals) {
  EXPECT_EQ(Render("{{ range(3) }} {{ range(1, 7, 2) }} {{ range(3, 0, -1) }}"),
            "[0, 1, 2] [1, 3, 5] [3, 2, 1]");
  ManualClock clock(Time::FromMillis(1'700'000'000'000));  // 2023-11-14 22:13:20 UTC
  RenderOptions options;
  options.clock = &clock;
  EXPECT_EQ(Render("{{ strftime_now('%d %b %Y, %B %m %H:%M %%') }}", {}, options),
            "14 Nov 2023, November 11 22:13 %");
}

TEST(Expressions, CallsWithSpreads) {
  EXPECT_EQ(Render("{% macro m(a, b, c=0) %}{{ a }}{{ b }}{{ c }}{% endmacro %}"
                   "{{ m(*[1, 2]) }} {{ m(1, **{'b': 5, 'c': 6}) }}"),
            "120 156");
}

}  // namespace
}  // namespace switchyard::chat_template
