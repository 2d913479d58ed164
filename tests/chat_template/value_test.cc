// Values: conversion from JSON, truthiness, loose equality, JSON output
// (chat_template/internal/value.h, json_out.h).
#include "chat_template/internal/value.h"

#include <gtest/gtest.h>

#include "chat_template/internal/error.h"
#include "chat_template/internal/json_out.h"

namespace switchyard::chat_template::internal {
namespace {

using Json = nlohmann::ordered_json;

TEST(Value, FromJsonKeepsJavaScriptKeyOrder) {
  const Value v = FromJson(Json::parse(R"({"b": 1, "10": 2, "a": 3, "2": 4, "01": 5})"));
  std::string keys;
  for (const auto& [k, x] : v.dict().entries()) keys += k + ",";
  EXPECT_EQ(keys, "2,10,b,a,01,");  // array-index keys first, in numeric order
  EXPECT_TRUE(FromJson(Json(3.0)).is(Kind::kInt));
  EXPECT_TRUE(FromJson(Json(3.5)).is(Kind::kFloat));
}

TEST(Value, Truthiness) {
  EXPECT_FALSE(Truthy(Value::List({})));
  EXPECT_FALSE(Truthy(Value::Str("")));
  EXPECT_FALSE(Truthy(Value::Float(std::nan(""))));
  EXPECT_TRUE(Truthy(Value::Dict(std::make_shared<ObjectData>(), Kind::kNamespace)));
  EXPECT_TRUE(JsTruthy(Value::List({})));
}

TEST(Value, LooseEquality) {
  const size_t max = 1 << 20;
  EXPECT_TRUE(LooseEquals(Value::Int(1), Value::Str(" 1 "), max));
  EXPECT_TRUE(LooseEquals(Value::Bool(true), Value::Str("1"), max));
  EXPECT_TRUE(LooseEquals(Value::Null(), Value(), max));
  EXPECT_FALSE(LooseEquals(Value::Null(), Value::Int(0), max));
  EXPECT_TRUE(LooseEquals(Value::List({Value::Int(1), Value::Str("a")}), Value::Str("1,a"), max));
  const Value list = Value::List({});
  EXPECT_TRUE(LooseEquals(list, list, max));
  EXPECT_FALSE(LooseEquals(list, Value::List({}), max));
  EXPECT_FALSE(StrictEquals(Value::Int(1), Value::Str("1")));
  EXPECT_TRUE(StrictEquals(Value::Int(1), Value::Float(1)));
}

TEST(JsonOut, Formats) {
  const Value v = FromJson(Json::parse(R"({"a": [1, 2.5, "x\u2028"], "b": {}})"));
  JsonFormat f;
  EXPECT_EQ(ToJson(v, f), "{\"a\": [1, 2.5, \"x\xE2\x80\xA8\"], \"b\": {}}");
  f.indent = 1;
  EXPECT_EQ(ToJson(v, f), "{\n \"a\": [\n  1,\n  2.5,\n  \"x\xE2\x80\xA8\"\n ],\n \"b\": {}\n}");
  f = JsonFormat();
  f.max_bytes = 5;
  EXPECT_THROW(ToJson(v, f), TemplateError);
  EXPECT_EQ(JsonQuote("\x7f\x1f"), "\"\x7f\\u001f\"");
}

}  // namespace
}  // namespace switchyard::chat_template::internal
