// Filters of the Jinja subset, with and without arguments, and the extensions.
#include <gtest/gtest.h>

#include "tests/chat_template/render_helpers.h"

namespace switchyard::chat_template {
namespace {

using testing::Error;
using testing::Render;
using testing::RenderExt;

TEST(Filters, Lists) {
  const Json ctx = {{"l", {3, 1, 2, 1}}, {"s", {"b", "A", "c"}}};
  EXPECT_EQ(Render("{{ l|length }} {{ l|first }} {{ l|last }} {{ l|reverse }} {{ l|sort }}", ctx),
            "4 3 1 [1, 2, 1, 3] [1, 1, 2, 3]");
  EXPECT_EQ(
      Render("{{ l|unique }} {{ l|join }} {{ l|join(', ') }} {{ s|sort }} {{ s|sort(true) }}", ctx),
      "[3, 1, 2] 3121 3, 1, 2, 1 [\"A\", \"b\", \"c\"] [\"c\", \"b\", \"A\"]");
  EXPECT_EQ(Render("{{ s|sort(case_sensitive=true) }} {{ l|list }} {{ l|string }}", ctx),
            "[\"A\", \"b\", \"c\"] [3, 1, 2, 1] [3, 1, 2, 1]");
  EXPECT_EQ(Render("{{ [1, none, 'a', 2.0]|join('-') }}"), "1--a-2");
}

TEST(Filters, ListsOfDicts) {
  const Json ctx = {{"ms",
                     {{{"role", "user"}, {"n", 2}, {"f", {{"name", "x"}}}},
                      {{"role", "system"}, {"n", 1}, {"f", {{"name", "y"}}}},
                      {{"role", "user"}, {"n", 3}}}}};
  EXPECT_EQ(Render("{{ ms|selectattr('role', 'equalto', 'user')|map(attribute='n')|list }}", ctx),
            "[2, 3]");
  EXPECT_EQ(Render("{{ ms|rejectattr('role', 'equalto', 'user')|length }}", ctx), "1");
  EXPECT_EQ(Render("{{ ms|selectattr('f')|map(attribute='f.name')|join(',') }}", ctx), "x,y");
  EXPECT_EQ(Render("{{ ms|map(attribute='f.name', default='-')|join(',') }}", ctx), "x,y,-");
  EXPECT_EQ(Render("{{ ms|sort(attribute='n')|map(attribute='n')|join }}", ctx), "123");
  EXPECT_EQ(
      Render("{{ ms|sort(attribute='n', reverse=true)|map(attribute='role')|join(',') }}", ctx),
      "user,user,system");
}

TEST(Filters, Strings) {
  EXPECT_EQ(Render("{{ '  x  '|trim }}|{{ 'ab'|upper }}{{ 'AB'|lower }} {{ 'a b'|title }} {{ "
                   "'aB'|capitalize }}"),
            "x|ABab A B AB");
  EXPECT_EQ(Render("{{ 'héllo'|length }} {{ '😀'|length }} {{ 'abc'|join('-') }} {{ 'x'|string }}"),
            "5 2 a-b-c x");
  EXPECT_EQ(Render("{{ 'a\\nb\\n\\nc'|indent }}|{{ 'a\\nb'|indent(2, true) }}|{{ "
                   "'a\\n\\nb'|indent('> ', blank=true) }}"),
            "a\n    b\n\n    c|  a\n  b|a\n> \n> b");
  EXPECT_EQ(Render("{{ 'aXbX'|replace('X', '.') }} {{ 'aXbX'|replace('X', '.', 1) }}"),
            "a.b. a.bX");
  EXPECT_EQ(Render("{{ '42abc'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ ' -3.5e1 '|float }} {{ "
                   "'y'|float }}"),
            "42 0 7 -35.0 0.0");
}

TEST(Filters, NumbersAndBooleans) {
  EXPECT_EQ(
      Render(
          "{{ -3|abs }} {{ -2.5|abs }} {{ 3.9|int }} {{ -3.9|int }} {{ 3|float }} {{ 3|string }}"),
      "3 2.5 3 -3 3.0 3");
  EXPECT_EQ(Render("{{ true|int }} {{ false|float }} {{ true|string }} {{ true|bool }}"),
            "1 0.0 true true");
}

TEST(Filters, Dicts) {
  const Json ctx = {{"d", {{"b", 1}, {"a", {1, 2}}}}};
  EXPECT_EQ(
      Render("{{ d|length }} {{ d|items }} {{ d|keys }} {{ d|values }} {{ d|dictsort }}", ctx),
      "2 [[\"b\", 1], [\"a\", [1, 2]]] [\"b\", \"a\"] [1, [1, 2]] [[\"a\", [1, 2]], [\"b\", 1]]");
}

TEST(Filters, DefaultAndSafe) {
  EXPECT_EQ(Render("{{ x|default('d') }} {{ ''|default('d') }} {{ ''|default('d', true) }} {{ "
                   "0|default(1, boolean=true) }}"),
            "d  d 1");
  EXPECT_EQ(Render("{{ '<b>'|safe }}"), "<b>");
}

TEST(Filters, ToJson) {
  const Json ctx = {{"v",
                     {{"s", "é\"\n\u0001"},
                      {"n", 1.0},
                      {"f", 2.5},
                      {"l", {true, nullptr}},
                      {"e", Json::object()}}}};
  EXPECT_EQ(Render("{{ v|tojson }}", ctx),
            "{\"s\": \"é\\\"\\n\\u0001\", \"n\": 1, \"f\": 2.5, \"l\": [true, null], \"e\": {}}");
  EXPECT_EQ(
      Render("{{ v.l|tojson(indent=2) }}|{{ v.e|tojson(indent=2) }}|{{ []|tojson(indent=2) }}",
             ctx),
      "[\n  true,\n  null\n]|{}|[]");
  EXPECT_EQ(Render("{{ v.s|tojson(ensure_ascii=true) }} {{ '😀'|tojson(ensure_ascii=true) }}", ctx),
            "\"\\u00e9\\\"\\n\\u0001\" \"\\ud83d\\ude00\"");
  EXPECT_EQ(Render("{{ {'b': 1, 'a': [1, 2]}|tojson(sort_keys=true, separators=(',', ':')) }}"),
            "{\"a\":[1,2],\"b\":1}");
  EXPECT_EQ(Render("{{ undefined_var|tojson }} {{ (big * big)|tojson }} {{ tiny|tojson }}",
                   {{"big", 1.5e300}, {"tiny", 1e-7}}),
            "null null 1e-7");
}

TEST(Filters, NumbersPrintAsJavaScriptDoes) {
  EXPECT_EQ(Render("{{ 123456789012345678901234 }} {{ 0.000001 }} {{ 0.0000001 }} {{ 10 ** 21 }}"),
            "1.2345678901234569e+23 0.000001 1e-7 1e+21");
  EXPECT_EQ(Render("{{ 100.0 }} {{ 10.0 ** 20 }} {{ 0.000000025 * 2 }} {{ 1 / 0 }} {{ -1 / 0 }}"),
            "100.0 100000000000000000000.0 5e-8 Infinity -Infinity");
  // A context number with no fraction is an integer, as JSON.parse gives it.
  EXPECT_EQ(Render("{{ x }} {{ x is integer }} {{ y }}", {{"x", 5.0}, {"y", 5.25}}), "5 true 5.25");
}

TEST(Filters, Extensions) {
  EXPECT_EQ(RenderExt("{{ [1, 2]|count }} {{ x|d('u') }} {{ 'v'|default }} {{ '<&>'|e }}"),
            "2 u v &lt;&amp;&gt;");
  EXPECT_EQ(
      RenderExt("{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 2.1|round(0, 'ceil') }}"),
      "2.0 4.0 2.67 3.0");
  EXPECT_EQ(RenderExt("{{ [0, 1, 2, 3]|select('odd')|list }} {{ [0, 1, '', 'a']|reject|list }}"),
            "[1, 3] [0, \"\"]");
  EXPECT_EQ(RenderExt("{{ [1, 2, 3, 4, 5]|batch(2, 0)|list }} {{ 'ab'|list }} {{ 'ab'|first }}"),
            "[[1, 2], [3, 4], [5, 0]] [\"a\", \"b\"] a");
  EXPECT_EQ(RenderExt("{{ ['a', 'b']|map('upper')|join }} {{ 'x'|upper() }}"), "AB X");
}

TEST(Filters, RefusedAsTheReferenceDoes) {
  EXPECT_EQ(Error("{{ none|length }}"),
            "chat_template line 1, column 9: filter 'length' does not apply to a none");
  EXPECT_EQ(Error("{{ x|frobnicate }}"),
            "chat_template line 1, column 6: unknown filter 'frobnicate'");
  EXPECT_NE(Error("{{ (1, 2)|tojson }}").find("cannot convert tuple to JSON"), std::string::npos);
  EXPECT_NE(Error("{{ [1, 'a']|sort }}").find("cannot compare"), std::string::npos);
}

}  // namespace
}  // namespace switchyard::chat_template
