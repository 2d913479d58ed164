// JsonObjectConstraint and TokenTrie (cpu_engine/json_constraint.h): the language byte by
// byte, Completion() over random walks, schema errors, and the trie walk against CanFeed.
#include "cpu_engine/json_constraint.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace switchyard::cpu_engine {
namespace {

using nlohmann::json;

// Every kind of property.
constexpr const char* kAllKinds = R"({"type": "object", "properties": {
  "s": {"type": "string"}, "n": {"type": "number"}, "i": {"type": "integer"},
  "b": {"type": "boolean"}, "z": {"type": "null"}, "e": {"enum": ["red", "green", 3, 10]},
  "o": {"type": "object"}, "a": {"type": "array"}, "any": {}, "multi": {"type": ["string", "null"]}},
  "required": ["s", "n", "i", "b", "z", "e", "o", "a", "any", "multi"]})";

JsonObjectConstraint Make(const std::string& schema) {
  auto c = JsonObjectConstraint::FromSchema(schema);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

// A schema of one required property `v` with the given property schema.
JsonObjectConstraint One(const std::string& prop) {
  return Make(R"({"type":"object","properties":{"v":)" + prop + R"(},"required":["v"]})");
}

// Whether `text` is accepted fed one byte at a time (and, when so, whether it completes).
bool Accepts(JsonObjectConstraint c, const std::string& text, bool* complete = nullptr) {
  for (char b : text)
    if (!c.Feed(std::string_view(&b, 1))) return false;
  if (complete) *complete = c.complete();
  return true;
}

bool AcceptsWhole(const JsonObjectConstraint& c, const std::string& text) {
  bool complete = false;
  return Accepts(c, text, &complete) && complete;
}

TEST(JsonObjectConstraint, AcceptsAnObjectOfEveryKindByteByByte) {
  const std::string text =
      "{ \"s\": \"h\\\"i\\\\ \\/ \\u00e9 \\ud83d\\ude00 \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
      "\"n\":-12.5e+3,\"i\": 42 ,\"b\":true,\"z\":null,\"e\":10,"
      "\"o\":{\"x\":[1,{\"y\":null}],\"w\":\"v\"},\"a\":[1,\"a\",[true],{}],\"any\":[],"
      "\"multi\":\"m\"}";
  EXPECT_TRUE(AcceptsWhole(Make(kAllKinds), text));
  json parsed = json::parse(text);
  EXPECT_EQ(parsed["n"], -12500.0);
}

TEST(JsonObjectConstraint, KeysAreTheRequiredOnesInOrderAndNothingFollowsTheClose) {
  JsonObjectConstraint c = Make(R"({"properties":{"a":{},"b":{}},"required":["a","b"]})");
  EXPECT_FALSE(Accepts(c, R"({"b")"));
  EXPECT_FALSE(Accepts(c, R"({"a":1})")) << "b is required";
  EXPECT_FALSE(Accepts(c, R"({"a":1,"a")"));
  EXPECT_FALSE(Accepts(c, R"({})"));
  EXPECT_TRUE(AcceptsWhole(c, R"({"a":1,"b":2})"));
  EXPECT_FALSE(Accepts(c, R"({"a":1,"b":2} )"));
  EXPECT_FALSE(Accepts(c, R"({"a":1,"b":2}})"));
  EXPECT_FALSE(Accepts(c, R"({"a":1,"b":2,)"));
  JsonObjectConstraint none = Make(R"({"type":"object","properties":{"a":{}}})");
  EXPECT_TRUE(AcceptsWhole(none, "{ }"));
  EXPECT_FALSE(Accepts(none, R"({")"));
  EXPECT_FALSE(Accepts(none, "x"));
}

TEST(JsonObjectConstraint, WhitespaceRunsAreBounded) {
  JsonObjectConstraint c = One("{}");
  EXPECT_TRUE(Accepts(c, "{" + std::string(8, '\n') + "\"v\"" + std::string(8, '\t') + ":" +
                             std::string(8, ' ') + "[" + std::string(8, '\r') + "]" +
                             std::string(8, ' ') + "}"));
  EXPECT_FALSE(Accepts(c, " ")) << "nothing before the object";
  EXPECT_FALSE(Accepts(c, "{" + std::string(9, ' ')));
  EXPECT_TRUE(Accepts(c, "{" + std::string(8, ' ') + "\"v\"  :\"" + std::string(50, ' ')));
}

TEST(JsonObjectConstraint, StringEscapesAndUtf8) {
  JsonObjectConstraint c = One(R"({"type":"string"})");
  const std::string open = "{\"v\":\"";
  for (const char* ok : {"\\\"", "\\\\", "\\/", "\\b\\f\\n\\r\\t", "\\u0041", "\\uFFFF",
                         "\\ud83d\\ude00", "\\uDBFF\\uDFFF", "\xc2\x80", "\xe0\xa0\x80",
                         "\xed\x9f\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", " ~"})
    EXPECT_TRUE(AcceptsWhole(c, open + ok + "\"}")) << ok;
  for (const char* bad : {"\\x",      "\\U",        "\\u00G",         "\\udc00",  "\\ud83d\"",
                          "\\ud83dx", "\\ud83d\\n", "\\ud83d\\u0041", "\xc0",     "\xc1",
                          "\x80",     "\xe0\x80",   "\xed\xa0",       "\xf0\x80", "\xf4\x90",
                          "\xf5",     "\xff",       "\xc3\x41",       "\x01",     "\n",
                          "\t"})
    EXPECT_FALSE(Accepts(c, open + bad)) << bad;
  // A character split across feeds is fine.
  JsonObjectConstraint split = c;
  EXPECT_TRUE(split.Feed(open + "\xe2"));
  EXPECT_FALSE(split.CanFeed("\""));
  EXPECT_TRUE(split.Feed("\x82"));
  EXPECT_TRUE(split.Feed("\xac\"}"));
  EXPECT_TRUE(split.complete());
  EXPECT_FALSE(AcceptsWhole(c, R"({"v":1})"));
}

TEST(JsonObjectConstraint, Numbers) {
  JsonObjectConstraint n = One(R"({"type":"number"})");
  for (const char* ok : {"0", "-0", "0.5", "-12.25", "1e10", "1E+5", "2.5e-3", "-0.0e0", "7"})
    EXPECT_TRUE(AcceptsWhole(n, std::string("{\"v\":") + ok + "}")) << ok;
  for (const char* bad : {"01", "1.}", ".5", "1e}", "1e+}", "+1", "-}", "--1", "1.2.3", "1ee",
                          "0x1", "1e123", "1234567890123456789"})
    EXPECT_FALSE(Accepts(n, std::string("{\"v\":") + bad)) << bad;
  JsonObjectConstraint i = One(R"({"type":"integer"})");
  EXPECT_TRUE(AcceptsWhole(i, R"({"v":-17})"));
  EXPECT_FALSE(Accepts(i, R"({"v":1.)"));
  EXPECT_FALSE(Accepts(i, R"({"v":1e)"));
  EXPECT_FALSE(Accepts(i, R"({"v":"1")"));
}

TEST(JsonObjectConstraint, LiteralsEnumsAndNesting) {
  JsonObjectConstraint b = One(R"({"type":"boolean"})");
  EXPECT_TRUE(AcceptsWhole(b, R"({"v":false})"));
  EXPECT_FALSE(Accepts(b, R"({"v":tru})"));
  EXPECT_FALSE(Accepts(b, R"({"v":null)"));
  EXPECT_FALSE(Accepts(b, R"({"v":truex)"));
  EXPECT_TRUE(AcceptsWhole(One(R"({"type":"null"})"), R"({"v":null})"));

  JsonObjectConstraint e = One(R"({"enum":["red","green",1,10,null]})");
  for (const char* ok : {"\"red\"", "\"green\"", "1", "10", "null"})
    EXPECT_TRUE(AcceptsWhole(e, std::string("{\"v\":") + ok + "}")) << ok;
  for (const char* bad : {"\"blue", "\"re\"", "2", "100", "\"red\"x", "1.0"})
    EXPECT_FALSE(AcceptsWhole(e, std::string("{\"v\":") + bad + "}")) << bad;
  EXPECT_TRUE(AcceptsWhole(One(R"({"const":"x"})"), R"({"v":"x"})"));
  EXPECT_FALSE(Accepts(One(R"({"const":"x"})"), R"({"v":"y)"));

  JsonObjectConstraint o = One(R"({"type":"object"})");
  EXPECT_TRUE(AcceptsWhole(o, R"({"v":{"a":{"b":[1,[2,[]]]},"":""}})"));
  EXPECT_FALSE(Accepts(o, R"({"v":[)"));
  EXPECT_FALSE(Accepts(o, R"({"v":{"a"})"));
  EXPECT_FALSE(Accepts(o, R"({"v":{"a":1,})"));
  EXPECT_FALSE(Accepts(o, R"({"v":{1)"));
  EXPECT_FALSE(Accepts(o, R"({"v":{"a":1]})"));
  JsonObjectConstraint a = One(R"({"type":"array"})");
  EXPECT_TRUE(AcceptsWhole(a, R"({"v":[]})"));
  EXPECT_FALSE(Accepts(a, R"({"v":[1,])"));
  EXPECT_FALSE(Accepts(a, R"({"v":{)"));
  std::string deep = "{\"v\":";
  for (int d = 0; d < 32; ++d) deep += "[";
  EXPECT_TRUE(Accepts(a, deep));
  EXPECT_FALSE(Accepts(a, deep + "["));
}

TEST(JsonObjectConstraint, FeedThatFailsLeavesTheStateUnchanged) {
  JsonObjectConstraint c = One(R"({"type":"string"})");
  ASSERT_TRUE(c.Feed("{\"v\":\"ab"));
  EXPECT_FALSE(c.Feed("c\"x"));
  EXPECT_TRUE(c.CanFeed("c\"}"));
  EXPECT_FALSE(c.complete());
  EXPECT_TRUE(c.Feed("c\"}"));
  EXPECT_TRUE(c.complete());
  EXPECT_EQ(c.Completion(), "");
  EXPECT_TRUE(c.Feed(""));
  EXPECT_FALSE(c.CanFeed(" "));
}

// Checks that `prefix` + its completion is an object holding every required key of
// kAllKinds, with values of their types.
void ExpectCompletes(const JsonObjectConstraint& c, const std::string& prefix) {
  const std::string text = prefix + c.Completion();
  SCOPED_TRACE("text: " + text);
  EXPECT_TRUE(AcceptsWhole(Make(kAllKinds), text));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    FAIL() << e.what();
  }
  ASSERT_TRUE(j.is_object());
  for (const char* k : {"s", "n", "i", "b", "z", "e", "o", "a", "any", "multi"})
    ASSERT_TRUE(j.contains(k)) << k;
  EXPECT_TRUE(j["s"].is_string());
  EXPECT_TRUE(j["n"].is_number());
  EXPECT_TRUE(j["i"].is_number_integer());
  EXPECT_TRUE(j["b"].is_boolean());
  EXPECT_TRUE(j["z"].is_null());
  EXPECT_TRUE(j["e"] == "red" || j["e"] == "green" || j["e"] == 3 || j["e"] == 10) << j["e"];
  EXPECT_TRUE(j["o"].is_object());
  EXPECT_TRUE(j["a"].is_array());
}

TEST(JsonObjectConstraint, CompletionClosesEveryPrefixOfARandomWalk) {
  std::mt19937_64 rng(1234);
  const std::string structural = "{}[],:\" 0123456789-.eE+tfnrul\\u";
  for (int walk = 0; walk < 400; ++walk) {
    JsonObjectConstraint c = Make(kAllKinds);
    std::string text;
    const int steps = static_cast<int>(rng() % 300);
    for (int s = 0; s < steps && !c.complete(); ++s) {
      std::vector<char> allowed, preferred;
      for (int b = 0; b < 256; ++b) {
        const char ch = static_cast<char>(b);
        if (!c.CanFeed(std::string_view(&ch, 1))) continue;
        allowed.push_back(ch);
        if (structural.find(ch) != std::string::npos) preferred.push_back(ch);
      }
      ASSERT_FALSE(allowed.empty()) << "stuck after: " << text;
      const std::vector<char>& from = !preferred.empty() && rng() % 4 != 0 ? preferred : allowed;
      const char ch = from[rng() % from.size()];
      ASSERT_TRUE(c.Feed(std::string_view(&ch, 1)));
      text.push_back(ch);
    }
    ExpectCompletes(c, text);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(JsonObjectConstraint, CompletionOfHalfWrittenScalars) {
  for (const char* prefix :
       {"",
        "{",
        "{\"",
        "{\"s",
        "{\"s\"",
        "{\"s\":",
        "{\"s\":\"",
        "{\"s\":\"\\",
        "{\"s\":\"\\u00",
        "{\"s\":\"\\ud83d",
        "{\"s\":\"\\ud83d\\",
        "{\"s\":\"\\ud83d\\u",
        "{\"s\":\"\\ud83d\\uDE",
        "{\"s\":\"\xe2",
        "{\"s\":\"\xf0\x9f",
        "{\"s\":\"\",\"n\":-",
        "{\"s\":\"\",\"n\":1.",
        "{\"s\":\"\",\"n\":1e",
        "{\"s\":\"\",\"n\":1e+",
        "{\"s\":\"\",\"n\":12",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":t",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":true,\"z\":null,\"e\":\"gr",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":true,\"z\":null,\"e\":1",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":true,\"z\":null,\"e\":3,\"o\":{\"k\":[1,{\"q\"",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":true,\"z\":null,\"e\":3,\"o\":{},\"a\":[[\"x\",",
        "{\"s\":\"\",\"n\":1,\"i\":0,\"b\":true,\"z\":null,\"e\":3,\"o\":{},\"a\":[],\"any\":-"}) {
    JsonObjectConstraint c = Make(kAllKinds);
    ASSERT_TRUE(c.Feed(prefix)) << prefix;
    ExpectCompletes(c, prefix);
  }
}

TEST(JsonObjectConstraint, FromSchemaNamesWhatIsWrong) {
  auto err = [](const std::string& schema) {
    auto c = JsonObjectConstraint::FromSchema(schema);
    EXPECT_FALSE(c.ok()) << schema;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    return c.status().message();
  };
  EXPECT_NE(err("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(err("[]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(err(R"({"type":"string"})").find("not \"object\""), std::string::npos);
  EXPECT_NE(err(R"({"properties":[]})").find("\"properties\""), std::string::npos);
  EXPECT_NE(err(R"({"required":"a"})").find("\"required\" is not an array"), std::string::npos);
  EXPECT_NE(err(R"({"required":[1]})").find("not a string"), std::string::npos);
  EXPECT_NE(err(R"({"required":["a","a"]})").find("twice"), std::string::npos);
  EXPECT_NE(err(R"({"properties":{"a":{"type":"date"}},"required":["a"]})").find("unknown type"),
            std::string::npos);
  EXPECT_NE(err(R"({"properties":{"a":{"enum":[]}},"required":["a"]})").find("\"enum\""),
            std::string::npos);
  EXPECT_NE(err(R"({"properties":{"a":false},"required":["a"]})").find("schema false"),
            std::string::npos);
  EXPECT_NE(err(R"({"properties":{"a":3},"required":["a"]})").find("property \"a\""),
            std::string::npos);
  json many = json::array();
  for (int i = 0; i < 65; ++i) many.push_back(i);
  EXPECT_NE(err(R"({"properties":{"a":{"enum":)" + many.dump() + R"(}},"required":["a"]})")
                .find("more than 64"),
            std::string::npos);
  EXPECT_TRUE(JsonObjectConstraint::FromSchema(R"({"required":["x"]})").ok())
      << "a required key without a property schema takes any value";
}

// The trie walk allows exactly the tokens CanFeed allows, in every state of a walk.
TEST(JsonObjectConstraint, AllowedTokensAgreeWithCanFeed) {
  std::mt19937_64 rng(99);
  const std::string alphabet = "{}[],:\" 0123456789-.eEtrufalsn\\\xc3\xa9\xe2\x82\xac\x80xyz";
  std::vector<std::string> vocab;
  for (int b = 0; b < 256; ++b) vocab.emplace_back(1, static_cast<char>(b));
  vocab.emplace_back();  // a special token
  for (int t = 0; t < 3000; ++t) {
    std::string s(1 + rng() % 7, ' ');
    for (char& ch : s) ch = alphabet[rng() % alphabet.size()];
    vocab.push_back(s);
  }
  vocab.push_back(vocab[300]);  // two ids with the same bytes
  const TokenTrie trie(vocab);
  JsonObjectConstraint c = Make(kAllKinds);
  std::vector<uint8_t> allowed;
  for (int step = 0; step < 200 && !c.complete(); ++step) {
    c.AllowedTokens(trie, &allowed);
    ASSERT_EQ(allowed.size(), vocab.size());
    std::vector<int32_t> ok;
    for (size_t t = 0; t < vocab.size(); ++t) {
      const bool want = !vocab[t].empty() && c.CanFeed(vocab[t]);
      ASSERT_EQ(allowed[t] != 0, want) << "token " << t << " at step " << step;
      if (want) ok.push_back(static_cast<int32_t>(t));
    }
    ASSERT_FALSE(ok.empty());
    ASSERT_TRUE(c.Feed(vocab[ok[rng() % ok.size()]]));
  }
}

}  // namespace
}  // namespace switchyard::cpu_engine
